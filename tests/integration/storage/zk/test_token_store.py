"""ZkTokenStore on a real ZooKeeper: atomic token + notification writes, compare-and-set, chroot creation."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.errors import ConcurrentModification, TokenNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode


def _token(token_id: str = "StoreTestTokenAAAAAAAA") -> TokenInformation:
    alice = KafkaPrincipal.user("alice")
    return TokenInformation(token_id, alice, alice, (KafkaPrincipal.user("bob"),), 1000, 2000, 9000)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkConnection]:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield connection
    connection.stop()


@pytest.fixture
def store(zk: ZkConnection) -> ZkTokenStore:
    return ZkTokenStore(zk)


def test_start_creates_the_chroot_and_parents(zk: ZkConnection, raw_zk: KazooClient) -> None:
    assert raw_zk.exists(TokenZNode.ROOT) and raw_zk.exists(TokenChangeZNode.ROOT)
    assert raw_zk.exists("/config/users") and raw_zk.exists("/config/changes")


def test_create_get_list(store: ZkTokenStore) -> None:
    token = _token()
    store.create(token)
    stored = store.get(token.token_id)
    assert stored is not None and stored.token == token and stored.version == 0
    assert [s.token for s in store.list()] == [token]
    assert store.get("NoSuchTokenAAAAAAAAAAA") is None


def test_each_write_has_exactly_one_notification(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    token = _token()
    store.create(token)
    store.update(token.with_expiry(3000), 0)
    store.delete(token.token_id, 1)
    changes = sorted(raw_zk.get_children(TokenChangeZNode.ROOT))
    assert changes == [f"token_change_{n:010d}" for n in range(3)]
    assert {raw_zk.get(f"{TokenChangeZNode.ROOT}/{name}")[0] for name in changes} == {token.token_id.encode()}


def test_stale_version_is_refused_and_writes_nothing(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    token = _token()
    store.create(token)
    store.update(token.with_expiry(3000), 0)
    with pytest.raises(ConcurrentModification):
        store.update(token.with_expiry(4000), 0)
    with pytest.raises(ConcurrentModification):
        store.delete(token.token_id, 0)
    stored = store.get(token.token_id)
    assert stored is not None and stored.token.expiry_timestamp == 3000
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == 2  # the refused writes left no notification


def test_duplicate_create_is_refused_atomically(store: ZkTokenStore, raw_zk: KazooClient) -> None:
    store.create(_token())
    with pytest.raises(ConcurrentModification):
        store.create(_token())
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == 1


def test_update_of_a_deleted_token(store: ZkTokenStore) -> None:
    token = _token()
    store.create(token)
    store.delete(token.token_id, 0)
    with pytest.raises(TokenNotFound):
        store.update(token, 0)


def test_version_1_store_writes_version_1(zk: ZkConnection, raw_zk: KazooClient) -> None:
    ZkTokenStore(zk, znode_version=1).create(_token())
    assert b'"version":1' in raw_zk.get(f"{TokenZNode.ROOT}/{_token().token_id}")[0]
    assert b"tokenRequester" not in raw_zk.get(f"{TokenZNode.ROOT}/{_token().token_id}")[0]


def test_concurrent_writers_never_lose_an_update(store: ZkTokenStore) -> None:
    """Many threads each read-modify-write with compare-and-set; every accepted write is counted once."""
    store.create(_token())
    accepted = []
    lock = threading.Lock()

    def bump() -> None:
        for _ in range(20):
            while True:
                stored = store.get(_token().token_id)
                assert stored is not None
                try:
                    store.update(stored.token.with_expiry(stored.token.expiry_timestamp + 1), stored.version)
                except ConcurrentModification:
                    continue
                with lock:
                    accepted.append(1)
                break

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = store.get(_token().token_id)
    assert final is not None
    assert final.token.expiry_timestamp == 2000 + len(accepted) == 2080
