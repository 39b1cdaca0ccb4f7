"""ZkLockoutStore on a real ZooKeeper: a lock one replica publishes reaches another through its watch, with no
read of the lock's data; any account name works (NUL, lone surrogates, very long ones hashed); a release
deletes once; the live replicas are counted from the sweeper election."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.lockout import Lock
from app.storage.zk.connection import ZkConnection
from app.storage.zk.lockout_store import ZkLockoutStore
from app.storage.zk.znodes import KtsZNodes
from app.storage.zk.znodes.kts import MAX_LOCKOUT_KEY_LENGTH
from tests.api.helpers import eventually

NOW = 1_700_000_000_000


@pytest.fixture
def make_store(zk_connect: str) -> Iterator[Callable[[str], ZkLockoutStore]]:
    connections: list[ZkConnection] = []

    def make(service_id: str) -> ZkLockoutStore:
        connection = ZkConnection(zk_connect, session_timeout_ms=6000)
        connection.start()
        connections.append(connection)
        store = ZkLockoutStore(connection, service_id=service_id)
        store.start()
        return store

    yield make
    for connection in connections:
        connection.stop()


@pytest.mark.parametrize(
    "account", ["User:alice", "User:al/ice@x", "User:\x00\x1b[2J", "User:\ud800", "User:" + "é" * 300]
)
def test_a_lock_published_on_one_replica_reaches_the_other(
    make_store: Callable[[str], ZkLockoutStore], raw_zk: KazooClient, account: str
) -> None:
    first, second = make_store("replica-a"), make_store("replica-b")
    first.publish(Lock(account, NOW, NOW + 60_000, failures=5))
    assert first.locked_until(account) == NOW + 60_000  # its own write, at once
    eventually(lambda: second.locked_until(account) == NOW + 60_000)
    assert second.locked_until("User:bob") is None
    (name,) = raw_zk.get_children(KtsZNodes.LOCKOUTS)
    assert len(name) < MAX_LOCKOUT_KEY_LENGTH + 40
    data, _ = raw_zk.get(f"{KtsZNodes.LOCKOUTS}/{name}")
    assert json.loads(data) == {"lockedAtMs": NOW, "untilMs": NOW + 60_000, "failures": 5, "serviceId": "replica-a"}

    assert second.release(account) == [NOW + 60_000]
    assert first.release(account) == []  # deleted once, by the replica that got there first
    eventually(lambda: first.locked_until(account) is None)


def test_release_of_expired_locks_only_takes_those_ended(
    make_store: Callable[[str], ZkLockoutStore], raw_zk: KazooClient
) -> None:
    store = make_store("replica-a")
    store.publish(Lock("User:alice", NOW, NOW + 1_000, failures=5))
    store.publish(Lock("User:alice", NOW, NOW + 9_000, failures=5))
    assert store.release("User:alice", expired_by_ms=NOW + 5_000) == [NOW + 1_000]
    assert store.locked_until("User:alice") == NOW + 9_000
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1


def test_the_replicas_are_the_sweeper_elections_contenders(
    make_store: Callable[[str], ZkLockoutStore], raw_zk: KazooClient
) -> None:
    store = make_store("replica-a")
    assert store.replicas() == 1  # none yet: counted as this one
    for n in range(3):
        raw_zk.create(f"{KtsZNodes.SWEEPER_ELECTION}/contender-", b"", ephemeral=True, sequence=True)
        eventually(lambda n=n: store.replicas() == n + 1)
