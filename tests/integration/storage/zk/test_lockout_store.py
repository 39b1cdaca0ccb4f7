"""ZkLockoutStore on a real ZooKeeper: a lock one replica shares reaches another through its watch; a lock lasts
its duration from its znode's creation time, so a replica whose clock runs an hour ahead neither ends it early
nor lets its leader delete it; the leader deletes ended locks; only locks in force count towards the bound,
which keeps the child list a small fraction of what a Java client lists; a release reaches every replica; the
live replicas are counted from the sweeper election."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.lockout import Lock, account_key
from app.storage.zk.connection import ZkConnection
from app.storage.zk.lockout_store import ZkLockoutStore
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually
from tests.clocks import ShiftedClock

DURATION = 600_000
HOUR = 3_600_000
JAVA_REPLY_LIMIT = 1_048_575  # a Java client's jute.maxbuffer by default


MakeStore = Callable[..., ZkLockoutStore]


@pytest.fixture
def make_store(zk_connect: str) -> Iterator[MakeStore]:
    connections: list[ZkConnection] = []

    def make(service_id: str, *, clock_offset_ms: int = 0, max_shared: int = 1_000) -> ZkLockoutStore:
        connection = ZkConnection(zk_connect, session_timeout_ms=6000)
        connection.start()
        connections.append(connection)
        store = ZkLockoutStore(
            connection, service_id=service_id, clock=ShiftedClock(clock_offset_ms), max_shared=max_shared
        )
        store.start()
        return store

    yield make
    for connection in connections:
        connection.stop()


def lock(account: str, duration_ms: int = DURATION) -> Lock:
    return Lock(account_key(account), account, failures=5, duration_ms=duration_ms, locked_at_ms=0)


@pytest.mark.parametrize(
    "account", ["User:alice", "User:al/ice@x-y", "User:\x00\x1b[2J", "User:\ud800", "User:" + "é" * 300]
)
def test_a_lock_shared_on_one_replica_reaches_the_other(
    make_store: MakeStore, raw_zk: KazooClient, account: str
) -> None:
    first, second = make_store("replica-a"), make_store("replica-b")
    assert first.share(lock(account))
    key = account_key(account)
    assert DURATION - 5_000 < first.locked_ms(key) <= DURATION  # its own write, at once
    eventually(lambda: second.locked_ms(key) > 0)
    assert second.locked_ms(key) <= DURATION
    assert second.locked_ms(account_key("User:bob")) == 0
    (name,) = raw_zk.get_children(KtsZNodes.LOCKOUTS)
    assert name.startswith(f"lock-{key}-{DURATION}-") and len(name) == 5 + 40 + 1 + len(str(DURATION)) + 1 + 10
    data, _ = raw_zk.get(f"{KtsZNodes.LOCKOUTS}/{name}")
    assert json.loads(data) == {"account": account[:256], "failures": 5, "lockedAtMs": 0, "serviceId": "replica-a"}


def test_names_sharing_their_first_251_characters_do_not_share_a_lock(make_store: MakeStore) -> None:
    store = make_store("replica-a")
    prefix = "User:" + "x" * 251
    assert store.share(lock(prefix + "-victim"))
    assert store.locked_ms(account_key(prefix + "-victim")) > 0
    assert store.locked_ms(account_key(prefix + "-other")) == 0


def test_a_replica_whose_clock_runs_ahead_sees_zookeepers_time(make_store: MakeStore, raw_zk: KazooClient) -> None:
    """An hour ahead, that replica would have seen every lock as ended and deleted it: it sees the lock in force,
    and when it leads, it deletes nothing that has not ended by ZooKeeper's clock."""
    honest = make_store("replica-a")
    ahead = make_store("replica-b", clock_offset_ms=HOUR)
    assert honest.share(lock("User:alice"))
    key = account_key("User:alice")
    eventually(lambda: ahead.locked_ms(key) > 0)
    remaining = ahead.locked_ms(key)
    assert DURATION - 10_000 < remaining <= DURATION
    assert abs(ahead.now_ms() - honest.now_ms()) < 10_000  # both read ZooKeeper's clock, not their own
    assert ahead.remove_ended() == 0
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1
    # And a lock the skewed replica shares lasts its duration too.
    assert ahead.share(lock("User:bob"))
    eventually(lambda: honest.locked_ms(account_key("User:bob")) > DURATION - 10_000)
    print(f"clock {HOUR} ms ahead: the lock still lasts {remaining} of {DURATION} ms on that replica")


def test_the_leader_deletes_ended_locks_and_spent_releases(make_store: MakeStore, raw_zk: KazooClient) -> None:
    store = make_store("replica-a")
    for n in range(150):
        assert store.share(lock(f"User:u{n}", duration_ms=1))
    assert store.share(lock("User:alice"))
    assert store.release(account_key("User:gone"), duration_ms=1) is False
    raw_zk.create(f"{KtsZNodes.LOCKOUTS}/User%3Aold@1700000000000@0000000001", b"")  # an older version's lock
    eventually(lambda: store.now_ms() > 0 and store.locked_ms(account_key("User:u0")) == 0)
    assert store.remove_ended() == 150
    (left,) = raw_zk.get_children(KtsZNodes.LOCKOUTS)
    assert left.startswith(f"lock-{account_key('User:alice')}-")


def test_only_locks_in_force_count_towards_the_bound(make_store: MakeStore, raw_zk: KazooClient) -> None:
    store = make_store("replica-a", max_shared=20)
    for n in range(20):
        assert store.share(lock(f"User:u{n}", duration_ms=1))
    eventually(lambda: store.locked_ms(account_key("User:u19")) == 0)
    assert store.share(lock("User:alice"))  # the 20 ended ones do not count
    for n in range(19):
        assert store.share(lock(f"User:v{n}"))
    assert not store.share(lock("User:bob"))  # 20 in force: kept by the replica, nothing written
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 40
    store.remove_ended()
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 20


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


def test_a_release_reaches_every_replica(make_store: MakeStore) -> None:
    first, second = make_store("replica-a"), make_store("replica-b")
    heard: list[tuple[str, str]] = []
    first.on_released(lambda key: heard.append(("first", key)))
    second.on_released(lambda key: heard.append(("second", key)))
    key = account_key("User:alice")
    assert first.share(lock("User:alice"))
    eventually(lambda: second.locked_ms(key) > 0)
    assert second.release(key, DURATION) is True
    assert second.locked_ms(key) == 0
    eventually(lambda: first.locked_ms(key) == 0)
    eventually(lambda: set(heard) == {("first", key), ("second", key)})  # a replica may hear its own twice
    assert first.release(key, DURATION) is False  # released already


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
