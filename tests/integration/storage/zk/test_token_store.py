"""What ZooKeeper's token store alone does, on a real ZooKeeper (the cases every token store passes are the
contract suite's, tests/contract/test_token_store.py): atomic token + notification writes, a writer that always
wins, the quota guards' and share ledgers' znodes, chroot creation."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest
from kazoo.client import KazooClient

from app.domain.errors import ConcurrentModification, TokenNotFound, TokenQuotaExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind
from app.service.ports import EXPIRE_NOW, CreateTerms, Renewal, StoredToken, TokenChange
from app.storage.zk.compare_and_set import MAX_ATTEMPTS
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import KtsZNodes, TokenChangeZNode, TokenZNode


def _token(token_id: str = "StoreTestTokenAAAAAAAA") -> TokenInformation:
    alice = KafkaPrincipal.user("alice")
    return TokenInformation(token_id, alice, alice, (KafkaPrincipal.user("bob"),), 1000, 2000, 9000)


@pytest.fixture
def store(zk: ZkConnection) -> ZkTokenStore:
    return ZkTokenStore(zk)


def test_start_creates_the_chroot_and_parents(zk: ZkConnection, raw_zk: KazooClient) -> None:
    assert raw_zk.exists(TokenZNode.ROOT) and raw_zk.exists(TokenChangeZNode.ROOT)
    assert raw_zk.exists("/config/users") and raw_zk.exists("/config/changes")


def _renewed(expiry: int) -> Callable[[StoredToken], TokenChange[int]]:
    return lambda stored: TokenChange(stored.token.with_expiry(expiry), stored.version, Renewal(-1))


def _deleted(stored: StoredToken) -> TokenChange[int]:
    return TokenChange(None, stored.version, EXPIRE_NOW)


def test_each_write_has_exactly_one_notification(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    token = _token()
    store.create(token)
    store.change(token.token_id, _renewed(3000))
    store.change(token.token_id, _deleted)
    changes = sorted(raw_zk.get_children(TokenChangeZNode.ROOT))
    assert changes == [f"token_change_{n:010d}" for n in range(3)]
    assert {raw_zk.get(f"{TokenChangeZNode.ROOT}/{name}")[0] for name in changes} == {token.token_id.encode()}


def test_a_change_that_loses_a_race_reads_and_decides_again(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    token = _token()
    store.create(token)
    seen: list[int] = []

    def decide(stored: StoredToken) -> TokenChange[None]:
        seen.append(stored.token.expiry_timestamp)
        if len(seen) == 1:  # another writer renews between this read and this write
            raw_zk.set(TokenZNode.path(token.token_id), TokenZNode.encode(token.with_expiry(5000)))
        return TokenChange(stored.token.with_expiry(stored.token.expiry_timestamp + 1), None, Renewal(-1))

    written, _ = store.change(token.token_id, decide)

    assert seen == [2000, 5000]
    assert written == StoredToken(token.with_expiry(5001), 2)
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == 2  # the create and the one accepted change


def test_a_change_that_keeps_losing_gives_up_and_writes_nothing(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    token = _token()
    store.create(token)
    attempts = []

    def decide_while_another_writer_always_wins(stored: StoredToken) -> TokenChange[None]:
        attempts.append(stored.version)
        raw_zk.set(TokenZNode.path(token.token_id), TokenZNode.encode(token))
        return TokenChange(stored.token.with_expiry(4000), None, Renewal(-1))

    with pytest.raises(ConcurrentModification, match="kept changing"):
        store.change(token.token_id, decide_while_another_writer_always_wins)

    assert attempts == list(range(MAX_ATTEMPTS))
    stored = store.get(token.token_id)
    assert stored is not None and stored.token.expiry_timestamp == 2000
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == 1  # the refused writes left no notification


def test_a_token_deleted_between_the_read_and_the_write_is_not_found(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    token = _token()
    store.create(token)

    def decide_while_another_writer_deletes(stored: StoredToken) -> TokenChange[None]:
        raw_zk.delete(TokenZNode.path(token.token_id))
        return TokenChange(stored.token.with_expiry(3000), None, Renewal(-1))

    with pytest.raises(TokenNotFound, match="no longer exists"):
        store.change(token.token_id, decide_while_another_writer_deletes)


def test_stale_deletions_are_refused_as_a_whole_and_write_nothing(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    first, second = _token("StoreTestTokenAAAAAAA1"), _token("StoreTestTokenAAAAAAA2")
    store.create(first)
    store.create(second)
    store.change(second.token_id, _renewed(3000))
    with pytest.raises(ConcurrentModification):
        store.delete_many([(first.token_id, 0, None), (second.token_id, 0, None)])
    assert store.get(first.token_id) is not None and store.get(second.token_id) is not None
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == 3  # the refused deletions left no notification
    store.delete_many([(first.token_id, 0, None), (second.token_id, 1, None)])
    assert store.list() == []


def test_deleting_a_deleted_token(store: ZkTokenStore) -> None:
    token = _token()
    store.create(token)
    store.delete_many([(token.token_id, 0, None)])
    with pytest.raises(TokenNotFound):
        store.delete_many([(token.token_id, 0, None)])


def test_duplicate_create_is_refused_atomically(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    store.create(_token())
    with pytest.raises(ConcurrentModification):
        store.create(_token())
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == 1


def test_version_1_store_writes_version_1(zk: ZkConnection, raw_zk: KazooClient) -> None:
    ZkTokenStore(zk, znode_version=1).create(_token())
    assert b'"version":1' in raw_zk.get(TokenZNode.path(_token().token_id))[0]
    assert b"tokenRequester" not in raw_zk.get(TokenZNode.path(_token().token_id))[0]


def test_a_create_charged_to_quotas_moves_their_guards_and_loses_to_a_create_in_between(
    store: ZkTokenStore, zk_connect: str, raw_zk: KazooClient
) -> None:
    alice = QuotaKey(QuotaKind.OWNER, KafkaPrincipal.user("alice"))
    nimbus = QuotaKey(QuotaKind.REQUESTER, KafkaPrincipal("User", "nimbus/host@REALM"))
    judged: list[dict[QuotaKey, int]] = []
    store.create(
        _token("GuardedFirstAAAAAAAAAA"), CreateTerms(quotas=[alice, nimbus], admit=lambda v: judged.append(dict(v)))
    )
    assert judged == [{alice: -1, nimbus: -1}]  # neither guard existed yet
    assert raw_zk.get_children(KtsZNodes.OWNER_QUOTAS) == ["User%3Aalice"]
    assert raw_zk.get_children(KtsZNodes.REQUESTER_QUOTAS) == ["User%3Animbus%2Fhost%40REALM"]
    assert raw_zk.exists(KtsZNodes.quota_guard(alice)).version == 0

    other = ZkConnection(zk_connect, session_timeout_ms=6000)
    other.start()
    try:
        judged.clear()

        def admit(versions: Mapping[QuotaKey, int]) -> None:
            judged.append(dict(versions))
            if len(judged) == 1:  # another replica creates for alice between the judgement and the write
                ZkTokenStore(other).create(_token("GuardedElsewhereAAAAAA"), CreateTerms(quotas=[alice]))

        store.create(_token("GuardedSecondAAAAAAAAA"), CreateTerms(quotas=[alice], admit=admit))
    finally:
        other.stop()
    assert judged == [{alice: 0}, {alice: 1}]  # judged again at the version the other create left
    assert raw_zk.exists(KtsZNodes.quota_guard(alice)).version == 2
    second = _token("GuardedSecondAAAAAAAAA")
    assert raw_zk.get(TokenZNode.path(second.token_id))[0] == TokenZNode.encode(second)  # the bytes brokers read


def test_what_admit_raises_ends_the_create_and_writes_nothing(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    key = QuotaKey(QuotaKind.OWNER, KafkaPrincipal.user("alice"))

    def refuse(_: Mapping[QuotaKey, int]) -> None:
        raise TokenQuotaExceeded("over")

    with pytest.raises(TokenQuotaExceeded):
        store.create(_token("RefusedByQuotaAAAAAAAA"), CreateTerms(quotas=[key], admit=refuse))
    assert raw_zk.exists(TokenZNode.path("RefusedByQuotaAAAAAAAA")) is None
    assert raw_zk.exists(KtsZNodes.quota_guard(key)) is None
    assert raw_zk.get_children(TokenChangeZNode.ROOT) == []
