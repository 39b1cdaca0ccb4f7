"""What ZooKeeper's lock store (ZkLockoutStore) alone does, on a real ZooKeeper; the cases every lockout store
passes are the contract suite's (tests/contract/test_lockout_store.py). A lock is a znode named by its key and
duration, its data naming the account; each replica estimates ZooKeeper's clock from znode times, whatever its
own says; the leader deletes an older version's locks too; the bound keeps the child list a small fraction of
what a Java client lists; the live replicas are counted from the sweeper election; an operator's listing names
the account each lock's data names."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.clock import SystemClock
from app.domain.lockout import Lock, account_key
from app.storage.zk.connection import ZkConnection
from app.storage.zk.lockout_store import ZkLockoutStore
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually

DURATION = 600_000
HOUR = 3_600_000
JAVA_REPLY_LIMIT = 1_048_575  # a Java client's jute.maxbuffer by default


class SkewedClock(SystemClock):
    def __init__(self, offset_ms: int) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms


MakeStore = Callable[..., ZkLockoutStore]


@pytest.fixture
def make_store(zk_connect: str) -> Iterator[MakeStore]:
    connections: list[ZkConnection] = []

    def make(service_id: str, *, clock_offset_ms: int = 0, max_shared: int = 1_000) -> ZkLockoutStore:
        connection = ZkConnection(zk_connect, session_timeout_ms=6000)
        connection.start()
        connections.append(connection)
        store = ZkLockoutStore(
            connection, service_id=service_id, clock=SkewedClock(clock_offset_ms), max_shared=max_shared
        )
        store.start()
        return store

    yield make
    for connection in connections:
        connection.stop()


def lock(account: str, duration_ms: int = DURATION) -> Lock:
    return Lock(account_key(account), account, failures=5, duration_ms=duration_ms, locked_at_ms=0)


@pytest.mark.parametrize("account", ["User:al/ice@x-y", "User:" + "é" * 300])
def test_a_lock_is_a_znode_named_by_its_key_and_duration(
    make_store: MakeStore, raw_zk: KazooClient, account: str
) -> None:
    assert make_store("replica-a").share(lock(account))

    (name,) = raw_zk.get_children(KtsZNodes.LOCKOUTS)
    key = account_key(account)
    assert name.startswith(f"lock-{key}-{DURATION}-") and len(name) == 5 + 40 + 1 + len(str(DURATION)) + 1 + 10
    data, _ = raw_zk.get(f"{KtsZNodes.LOCKOUTS}/{name}")
    assert json.loads(data) == {"account": account[:256], "failures": 5, "lockedAtMs": 0, "serviceId": "replica-a"}


def test_a_replica_whose_clock_runs_ahead_reads_zookeepers_time(make_store: MakeStore, raw_zk: KazooClient) -> None:
    honest = make_store("replica-a")
    ahead = make_store("replica-b", clock_offset_ms=HOUR)
    assert honest.share(lock("User:alice"))
    eventually(lambda: ahead.locked_ms(account_key("User:alice")) > 0)

    assert abs(ahead.now_ms() - honest.now_ms()) < 10_000  # both read ZooKeeper's clock, not their own
    assert ahead.remove_ended() == 0
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1


def test_the_leader_deletes_an_older_versions_locks_too(make_store: MakeStore, raw_zk: KazooClient) -> None:
    store = make_store("replica-a")
    assert store.share(lock("User:alice"))
    raw_zk.create(f"{KtsZNodes.LOCKOUTS}/User%3Aold@1700000000000@0000000001", b"")  # an older version's lock

    assert store.remove_ended() == 0  # no lock of this version ended

    (left,) = raw_zk.get_children(KtsZNodes.LOCKOUTS)
    assert left.startswith(f"lock-{account_key('User:alice')}-")


def test_the_bound_keeps_the_list_far_below_what_a_java_client_lists(
    make_store: MakeStore, raw_zk: KazooClient
) -> None:
    """The list at its worst: as many locks in force as allowed, and as many ended ones waiting for the leader,
    of the longest names (names of 193 characters once made 5,005 znodes of 1,136,351 bytes)."""
    store = make_store("replica-a")
    added = 0
    while store.share(lock(f"User:{added:0>188}", duration_ms=1 if added < 1_000 else DURATION)):
        added += 1
        assert added <= 2_000
    children = raw_zk.get_children(KtsZNodes.LOCKOUTS)
    reply_bytes = 4 + sum(4 + len(name.encode()) for name in children)
    assert len(children) == 2_000
    assert reply_bytes < JAVA_REPLY_LIMIT // 5
    print(f"lock znodes at the bound: {len(children)}, getChildren reply: {reply_bytes} bytes")


def test_the_replicas_are_the_sweeper_elections_contenders(make_store: MakeStore, raw_zk: KazooClient) -> None:
    store = make_store("replica-a")
    assert store.replicas() == 1  # none yet: counted as this one
    for n in range(3):
        raw_zk.create(f"{KtsZNodes.SWEEPER_ELECTION}/contender-", b"", ephemeral=True, sequence=True)
        eventually(lambda n=n: store.replicas() == n + 1)


def test_an_operator_lists_the_locks_in_force_from_zookeeper(make_store: MakeStore, raw_zk: KazooClient) -> None:
    """What ``kts lockout list`` reads, in a process of its own whose clock runs an hour ahead: the locks in force
    by ZooKeeper's clock, with the account each lock's data names (None when the data is no lock's document)."""
    replica = make_store("replica-a")
    assert replica.share(lock("User:alice"))
    assert replica.share(lock("User:gone", duration_ms=1))
    assert replica.share(lock("User:bob"))
    replica.release(account_key("User:bob"), DURATION)
    tampered = raw_zk.create(
        f"{KtsZNodes.LOCKOUTS}/lock-{account_key('User:eve')}-{DURATION}-", b"not json", sequence=True
    )
    operator = make_store("operator", clock_offset_ms=HOUR)
    eventually(lambda: operator.now_ms() > 0 and replica.locked_ms(account_key("User:gone")) == 0)

    listed = operator.in_force_locks()
    assert {(found.key, found.account) for found in listed} == {
        (account_key("User:alice"), "User:alice"),
        (account_key("User:eve"), None),
    }
    assert all(DURATION - 30_000 < found.remaining_ms <= DURATION for found in listed)
    raw_zk.delete(tampered)
