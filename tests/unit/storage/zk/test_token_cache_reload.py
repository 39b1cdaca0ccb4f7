"""A reload of every token (start-up's, and after a lost session) indexes each batch of reads as it comes, into an
index of its own put in place only once every batch is read: a reload that fails midway leaves the cache as it
was, and readers never see a half-loaded cache."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.domain.errors import StoreUnavailable
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.ports import LoadedToken
from app.storage.zk.token_cache import TokenCache

ALICE = KafkaPrincipal.user("alice")
SECRET = TokenSecret("s")


def _stored(token_id: str) -> LoadedToken:
    return TokenInformation(token_id, ALICE, ALICE, (), 1, 2, 3), 0


class _Store:
    """Answers the batches it is given; ``fail_after`` batches in, ZooKeeper is lost."""

    def __init__(self, batches: list[list[LoadedToken]], fail_after: int | None = None) -> None:
        self.batches = batches
        self.fail_after = fail_after
        self.seen_during_load: list[int] = []
        self.cache: TokenCache | None = None

    def list_batches(self) -> Iterator[list[LoadedToken]]:
        for n, batch in enumerate(self.batches):
            if n == self.fail_after:
                raise StoreUnavailable("ZooKeeper is unavailable.")
            assert self.cache is not None
            self.seen_during_load.append(len(self.cache))  # what a reader sees meanwhile
            yield batch


def _cache(store: _Store) -> TokenCache:
    cache = TokenCache(zk=object(), store=store, secret=SECRET)  # type: ignore[arg-type]
    store.cache = cache
    return cache


def test_a_reload_indexes_every_batch_and_readers_see_the_earlier_cache_until_it_is_done() -> None:
    store = _Store([[_stored("OldA")]])
    cache = _cache(store)
    cache._reload()
    store.batches = [[_stored("NewA"), _stored("NewB")], [], [_stored("NewC")]]

    cache._reload()

    assert store.seen_during_load == [0, 1, 1, 1]  # the first load's empty cache, then the old one throughout
    assert sorted(stored.token.token_id for stored in cache.tokens()) == ["NewA", "NewB", "NewC"]
    assert cache.find_by_hmac(SECRET.hmac("NewC")) == "NewC" and cache.loaded


def test_a_reload_that_fails_midway_leaves_the_cache_as_it_was() -> None:
    store = _Store([[_stored("OldA"), _stored("OldB")]])
    cache = _cache(store)
    cache._reload()
    store.batches, store.fail_after = [[_stored("NewA")], [_stored("NewB")]], 1

    with pytest.raises(StoreUnavailable):
        cache._reload()

    assert sorted(stored.token.token_id for stored in cache.tokens()) == ["OldA", "OldB"]
    assert cache.find_by_hmac(SECRET.hmac("OldB")) == "OldB"
