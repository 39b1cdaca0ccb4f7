"""Tombstones of deleted tokens: a token this replica saw deleted is not put back by a read that raced the
delete, for TOMBSTONE_SECONDS; then the tombstone goes, so a mass sweep does not keep 100k of them."""

from __future__ import annotations

from typing import Any

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.ports import StoredToken
from app.storage.zk.token_cache import TOMBSTONE_SECONDS, TokenCache

ALICE = KafkaPrincipal.user("alice")


class FakeTimer:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _stored(token_id: str, version: int = 0) -> StoredToken:
    return StoredToken(TokenInformation(token_id, ALICE, ALICE, (), 1, 2, 3), version)


def _cache(timer: FakeTimer) -> TokenCache:
    return TokenCache(zk=_Unused(), store=_Unused(), secret=TokenSecret("s"), timer=timer)  # type: ignore[arg-type]


def test_a_deleted_token_is_not_put_back_by_a_stale_read_while_its_tombstone_lasts() -> None:
    timer = FakeTimer()
    cache = _cache(timer)
    cache.apply(_stored("Deleted", version=3))
    cache.discard("Deleted")

    cache.apply(_stored("Deleted", version=4))  # a read that began before the delete, installed after it
    timer.now += TOMBSTONE_SECONDS - 1
    cache.apply(_stored("Deleted", version=5))

    assert cache.get("Deleted") is None
    cache.apply(_stored("Other"))
    assert cache.get("Other") is not None  # positive control: installs work


def test_tombstones_go_after_their_time_even_in_a_long_run_of_deletions() -> None:
    timer = FakeTimer()
    cache = _cache(timer)
    for n in range(5_000):
        cache.discard(f"token{n}")
    assert len(cache._tombstones) == 5_000

    timer.now += TOMBSTONE_SECONDS
    cache.discard("later")

    assert list(cache._tombstones) == ["later"]


class _Unused:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"not used by this test: {name}")
