"""The ``TokenStore`` contract (app/service/ports.py), run against the stores that keep what kts writes: ZooKeeper
(a real server) and memory. Create, get, list; a change answers what it wrote and what ``decide`` answered, and a
change that loses a race to another writer reads and decides again; what ``decide`` raises ends the change; an
absent token is not found; a batch of deletions guarded by stale versions is refused whole; a create charged to a
quota is judged by ``admit`` and written only when admitted. What one store alone does (ZooKeeper's
notifications, a writer that always wins, share ledgers' znodes) stays in its own suite."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from app.domain.errors import ConcurrentModification, TokenExpired, TokenNotFound, TokenQuotaExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind
from app.domain.token_secret import TokenSecret
from app.service.ports import CreateTerms, Expiry, Renewal, StoredToken, TokenChange
from app.storage.memory.tokens import MemoryTokenStore
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore

ALICE = KafkaPrincipal.user("alice")
R = TypeVar("R")


@dataclass
class Tokens:
    """``store``, and ``other``: another writer on the same tokens (another replica; in memory, the process)."""

    name: str
    store: Any
    other: Any


@pytest.fixture(params=["zookeeper", "memory"])
def tokens(request: pytest.FixtureRequest) -> Iterator[Tokens]:
    if request.param == "zookeeper":
        connect: str = request.getfixturevalue("zk_connect")
        connections = [ZkConnection(connect, session_timeout_ms=6000) for _ in range(2)]
        for connection in connections:
            connection.start()
        yield Tokens("zookeeper", ZkTokenStore(connections[0]), ZkTokenStore(connections[1]))
        for connection in connections:
            connection.stop()
    else:
        store = MemoryTokenStore(TokenSecret("contract-secret"))
        yield Tokens("memory", store, store)


def _token(store: Any, expiry: int = 2000) -> TokenInformation:
    return TokenInformation(store.next_token_id(), ALICE, ALICE, (KafkaPrincipal.user("bob"),), 1000, expiry, 9000)


def _renewed(expiry: int) -> Callable[[StoredToken], TokenChange[int]]:
    return lambda stored: _renewal(stored, expiry, stored.version)


def _renewal(stored: StoredToken, expiry: int, result: R) -> TokenChange[R]:
    """A renew to ``expiry``, in both forms (the state kts planned, and the request a cluster is sent)."""
    period_ms = expiry - stored.token.issue_timestamp
    return TokenChange(stored.token.with_expiry(expiry), result, request=Renewal(period_ms))


def _deleted(stored: StoredToken) -> TokenChange[int]:
    return TokenChange(None, stored.version, request=Expiry(-1))


def test_create_get_list(tokens: Tokens) -> None:
    store = tokens.store
    token = _token(store)

    assert store.create(token) == StoredToken(token, 0)

    assert store.get(token.token_id) == StoredToken(token, 0)
    assert [stored.token for stored in store.list()] == [token]
    missing = _token(store).token_id
    assert store.get(missing) is None
    assert store.get_many([token.token_id, missing]) == {token.token_id: StoredToken(token, 0), missing: None}
    assert tokens.other.get(token.token_id) == StoredToken(token, 0)  # every replica reads it


def test_change_returns_what_it_wrote_and_what_decide_answered(tokens: Tokens) -> None:
    store = tokens.store
    token = _token(store)
    store.create(token)

    written, judged_version = store.change(token.token_id, _renewed(3000))

    assert written == StoredToken(token.with_expiry(3000), 1) and judged_version == 0
    assert store.get(token.token_id) == written
    assert store.change(token.token_id, _deleted) == (None, 1)
    assert store.get(token.token_id) is None and store.list() == []


def test_a_change_that_loses_a_race_reads_and_decides_again(tokens: Tokens) -> None:
    store = tokens.store
    token = _token(store)
    store.create(token)
    seen: list[int] = []

    def decide(stored: StoredToken) -> TokenChange[None]:
        seen.append(stored.token.expiry_timestamp)
        if len(seen) == 1:  # another writer renews between this read and this write
            tokens.other.change(token.token_id, _renewed(5000))
        return _renewal(stored, stored.token.expiry_timestamp + 1, None)

    written, _ = store.change(token.token_id, decide)

    assert seen == [2000, 5000]
    assert written == StoredToken(token.with_expiry(5001), 2)


def test_what_decide_raises_ends_the_change(tokens: Tokens) -> None:
    token = _token(tokens.store)
    tokens.store.create(token)

    def refuse(stored: StoredToken) -> TokenChange[None]:
        raise TokenExpired("no")

    with pytest.raises(TokenExpired):
        tokens.store.change(token.token_id, refuse)
    assert tokens.store.get(token.token_id) == StoredToken(token, 0)


def test_change_of_an_absent_token(tokens: Tokens) -> None:
    with pytest.raises(TokenNotFound):
        tokens.store.change(_token(tokens.store).token_id, _renewed(3000))


def test_a_token_deleted_between_the_read_and_the_write_is_not_found(tokens: Tokens) -> None:
    token = _token(tokens.store)
    tokens.store.create(token)

    def decide_while_another_writer_deletes(stored: StoredToken) -> TokenChange[None]:
        tokens.other.change(token.token_id, _deleted)
        return _renewal(stored, 3000, None)

    with pytest.raises(TokenNotFound):
        tokens.store.change(token.token_id, decide_while_another_writer_deletes)
    assert tokens.store.get(token.token_id) is None


def test_stale_deletions_are_refused_as_a_whole(tokens: Tokens) -> None:
    store = tokens.store
    first, second = _token(store), _token(store)
    store.create(first)
    store.create(second)
    store.change(second.token_id, _renewed(3000))

    with pytest.raises(ConcurrentModification):
        store.delete_many([(first.token_id, 0, None), (second.token_id, 0, None)])

    assert store.get(first.token_id) is not None and store.get(second.token_id) is not None
    store.delete_many([(first.token_id, 0, None), (second.token_id, 1, None)])
    assert store.list() == []
    with pytest.raises(TokenNotFound):
        store.delete_many([(first.token_id, 0, None)])


def test_a_create_charged_to_a_quota_is_written_only_when_admitted(tokens: Tokens) -> None:
    store = tokens.store
    key = QuotaKey(QuotaKind.OWNER, ALICE)
    judged: list[Mapping[QuotaKey, int]] = []

    def admit(versions: Mapping[QuotaKey, int]) -> None:
        judged.append(dict(versions))

    def refuse(versions: Mapping[QuotaKey, int]) -> None:
        raise TokenQuotaExceeded("full")

    first = _token(store)
    assert store.create(first, CreateTerms(quotas=[key], admit=admit)) == StoredToken(first, 0)
    refused = _token(store)
    with pytest.raises(TokenQuotaExceeded):
        store.create(refused, CreateTerms(quotas=[key], admit=refuse))
    second = _token(store)
    store.create(second, CreateTerms(quotas=[key], admit=admit))

    assert [set(versions) for versions in judged] == [{key}, {key}]
    assert judged[0][key] != judged[1][key]  # the first create moved the guard on
    assert store.get(refused.token_id) is None
    assert {stored.token.token_id for stored in store.list()} == {first.token_id, second.token_id}


def test_a_create_whose_quota_moved_meanwhile_is_admitted_again(tokens: Tokens) -> None:
    """Another replica's create charged to the same quota lands between ``admit`` and the write: the store
    admits again, against the new version, so a quota is never overrun by racing creates."""
    store = tokens.store
    key = QuotaKey(QuotaKind.OWNER, ALICE)
    judged: list[int] = []
    raced = _token(store)

    def admit(versions: Mapping[QuotaKey, int]) -> None:
        judged.append(versions[key])
        if len(judged) == 1:
            tokens.other.create(raced, CreateTerms(quotas=[key], admit=lambda _: None))

    token = _token(store)
    store.create(token, CreateTerms(quotas=[key], admit=admit))

    assert len(judged) == 2 and judged[0] != judged[1]
    assert {stored.token.token_id for stored in store.list()} == {raced.token_id, token.token_id}


def test_concurrent_writers_never_lose_an_update(tokens: Tokens) -> None:
    """Threads change one token with compare-and-set, half through another replica; every accepted change counts
    once."""
    token = _token(tokens.store)
    tokens.store.create(token)
    accepted: list[int] = []
    lock = threading.Lock()

    def bump(store: Any) -> None:
        for _ in range(20):
            while True:
                try:
                    store.change(token.token_id, lambda s: _renewal(s, s.token.expiry_timestamp + 1, None))
                except ConcurrentModification:
                    continue  # lost more races than the store retries: try again
                with lock:
                    accepted.append(1)
                break

    threads = [threading.Thread(target=bump, args=(store,)) for store in [tokens.store, tokens.other] * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = tokens.store.get(token.token_id)
    assert final is not None
    assert final.token.expiry_timestamp == 2000 + len(accepted) == 2080
    assert final.version == 80
