"""The reads both token caches answer from their index (app/storage/indexed_token_cache.py): each answers what
the ``TokenIndex`` it holds answers, and the multi-key reads wait for a writer that holds the lock."""

from __future__ import annotations

import threading

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind
from app.domain.token_secret import TokenSecret
from app.service.ports import StoredToken
from app.storage.indexed_token_cache import IndexedTokenCache

SECRET = TokenSecret("cache-secret")
ALICE, BOB = KafkaPrincipal.user("alice"), KafkaPrincipal.user("bob")


class _Cache(IndexedTokenCache):
    def load(self, tokens: list[StoredToken]) -> None:
        with self._lock:
            self._index.load(tokens)
        self.loaded = True

    def held(self) -> threading.Lock:
        return self._lock


def _stored(token_id: str, owner: KafkaPrincipal, expiry: int, version: int = 0) -> StoredToken:
    return StoredToken(TokenInformation(token_id, owner, ALICE, (), 1_000, expiry, 9_000), version)


TOKENS = [
    _stored("CacheTokenAAAAAAAAAAAA", ALICE, 5_000),
    _stored("CacheTokenBBBBBBBBBBBB", BOB, 8_000, version=4),
    _stored("CacheTokenCCCCCCCCCCCC", BOB, 2_000),
]


def _cache() -> _Cache:
    cache = _Cache(SECRET)
    cache.load(TOKENS)
    return cache


def test_a_new_cache_is_empty_and_not_loaded() -> None:
    cache = _Cache(SECRET)
    assert len(cache) == 0 and not cache.loaded
    assert cache.get("CacheTokenAAAAAAAAAAAA") is None and cache.tokens() == []


def test_each_read_answers_from_the_index() -> None:
    cache = _cache()
    assert cache.loaded and len(cache) == 3
    assert cache.get("CacheTokenBBBBBBBBBBBB") == TOKENS[1]
    assert cache.find_by_hmac(SECRET.hmac("CacheTokenCCCCCCCCCCCC")) == "CacheTokenCCCCCCCCCCCC"
    assert cache.find_by_hmac(SECRET.hmac("NoSuchTokenAAAAAAAAAAA")) is None
    assert sorted(stored.token.token_id for stored in cache.tokens()) == [s.token.token_id for s in TOKENS]
    assert {stored.token.token_id for stored in cache.related_to([BOB])} == {
        "CacheTokenBBBBBBBBBBBB",
        "CacheTokenCCCCCCCCCCCC",
    }
    assert sorted(token.token_id for token in cache.related_tokens([BOB, ALICE])) == [s.token.token_id for s in TOKENS]
    assert [stored.token.token_id for stored in cache.after("CacheTokenAAAAAAAAAAAA", 1)] == ["CacheTokenBBBBBBBBBBBB"]
    assert cache.requested_count(ALICE) == 3
    assert cache.expired_count(4_000) == 1
    assert cache.live_count(QuotaKey(QuotaKind.REQUESTER, ALICE), 4_000) == 1


def test_multi_key_reads_wait_for_a_writer_holding_the_lock() -> None:
    cache = _cache()
    answered = threading.Event()
    with cache.held():
        reader = threading.Thread(target=lambda: (cache.tokens(), answered.set()), daemon=True)
        reader.start()
        assert not answered.wait(0.05)  # waiting, not answered from a half-written index
    assert answered.wait(30)
    reader.join(30)
