"""The ``LockoutStore`` and ``LockListing`` contract (app/service/ports.py), run against every implementation:
ZooKeeper (a real server), the database (SQLite and a real PostgreSQL) and memory. A lock one replica shares
reaches the others; a lock lasts its duration by the store's clock, so a replica whose clock runs an hour ahead
neither ends it early nor deletes it as leader; the leader deletes ended locks and spent releases; only locks in
force count towards the bound; a release reaches every replica's listeners; an operator lists the locks in
force; any name is a key. What one store alone does (its wire format, its clock reading) stays in its own
suite (tests/integration/storage/{zk,sql}/test_lockout_store.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from app.domain.clock import SystemClock
from app.domain.lockout import Lock, account_key
from app.storage.memory.lockout_store import MemoryLockoutStore
from app.storage.sql.lockout_store import SqlLockoutStore
from app.storage.zk.connection import ZkConnection
from app.storage.zk.lockout_store import ZkLockoutStore
from tests.api.helpers import eventually
from tests.clocks import ShiftedClock
from tests.engines import migrated_database

DURATION = 600_000
HOUR = 3_600_000


@dataclass
class Lockouts:
    """``make(service_id, clock_offset_ms=0, max_shared=1000)``: a replica's store, started."""

    name: str
    make: Callable[..., Any]


def _zookeeper(request: pytest.FixtureRequest) -> Iterator[Lockouts]:
    connect: str = request.getfixturevalue("zk_connect")
    connections: list[ZkConnection] = []

    def make(service_id: str, *, clock_offset_ms: int = 0, max_shared: int = 1_000) -> ZkLockoutStore:
        connection = ZkConnection(connect, session_timeout_ms=6000)
        connection.start()
        connections.append(connection)
        store = ZkLockoutStore(
            connection, service_id=service_id, clock=ShiftedClock(clock_offset_ms), max_shared=max_shared
        )
        store.start()
        return store

    yield Lockouts("zookeeper", make)
    for connection in connections:
        connection.stop()


def _database(request: pytest.FixtureRequest, url: str) -> Iterator[Lockouts]:
    engines: Callable[[str], Engine] = request.getfixturevalue("engines")
    started: list[SqlLockoutStore] = []

    def make(service_id: str, *, clock_offset_ms: int = 0, max_shared: int = 1_000) -> SqlLockoutStore:
        store = SqlLockoutStore(
            engines(url),
            service_id=service_id,
            replicas=lambda: 2,
            clock=ShiftedClock(clock_offset_ms),
            max_shared=max_shared,
        )
        store.start()
        started.append(store)
        return store

    yield Lockouts(url.partition(":")[0], make)
    for store in started:
        store.stop()


def _memory() -> Iterator[Lockouts]:
    """One process, one store: every "replica" is the same store, on the process's one clock."""
    shared: list[MemoryLockoutStore] = []

    def make(service_id: str, *, clock_offset_ms: int = 0, max_shared: int = 1_000) -> MemoryLockoutStore:
        if not shared:
            shared.append(MemoryLockoutStore(SystemClock(), max_locks=max_shared))
        return shared[0]

    yield Lockouts("memory", make)


@pytest.fixture(params=["zookeeper", "sqlite", "postgresql", "memory"])
def lockouts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lockouts]:
    if request.param == "zookeeper":
        yield from _zookeeper(request)
    elif request.param in ("sqlite", "postgresql"):
        yield from _database(request, migrated_database(request, tmp_path, request.param))
    else:
        yield from _memory()


def lock(account: str, duration_ms: int = DURATION) -> Lock:
    return Lock(account_key(account), account, failures=5, duration_ms=duration_ms, locked_at_ms=0)


@pytest.mark.parametrize(
    "account", ["User:alice", "User:al/ice@x-y", "User:\x00\x1b[2J", "User:\ud800", "User:" + "é" * 10_000]
)
def test_a_lock_shared_on_one_replica_reaches_the_other(lockouts: Lockouts, account: str) -> None:
    first, second = lockouts.make("replica-a"), lockouts.make("replica-b")
    key = account_key(account)

    assert first.share(lock(account))

    assert DURATION - 5_000 < first.locked_ms(key) <= DURATION  # its own write, at once
    eventually(lambda: second.locked_ms(key) > 0)
    assert DURATION - 10_000 < second.locked_ms(key) <= DURATION
    assert second.locked_ms(account_key("User:bob")) == 0
    assert first.replicas() >= 1


def test_names_sharing_a_long_prefix_do_not_share_a_lock(lockouts: Lockouts) -> None:
    store = lockouts.make("replica-a")
    prefix = "User:" + "x" * 251
    assert store.share(lock(prefix + "-victim"))
    assert store.locked_ms(account_key(prefix + "-victim")) > 0
    assert store.locked_ms(account_key(prefix + "-other")) == 0


def test_a_replica_whose_clock_runs_ahead_sees_the_stores_time(lockouts: Lockouts) -> None:
    """An hour ahead, that replica would have seen every lock as ended and deleted it as leader: it sees the lock
    in force, and deletes nothing that has not ended by the store's clock. (In memory, one process has one clock:
    the case holds trivially.)"""
    honest = lockouts.make("replica-a")
    ahead = lockouts.make("replica-b", clock_offset_ms=HOUR)
    key = account_key("User:alice")
    assert honest.share(lock("User:alice"))

    eventually(lambda: ahead.locked_ms(key) > 0)
    remaining = ahead.locked_ms(key)
    assert DURATION - 10_000 < remaining <= DURATION
    assert ahead.remove_ended() == 0
    assert [found.key for found in honest.in_force_locks()] == [key]
    assert ahead.share(lock("User:bob"))  # a lock the skewed replica shares lasts its duration too
    eventually(lambda: honest.locked_ms(account_key("User:bob")) > DURATION - 10_000)


def test_the_leader_deletes_ended_locks_and_spent_releases(lockouts: Lockouts) -> None:
    store = lockouts.make("replica-a")
    for n in range(150):
        assert store.share(lock(f"User:u{n}", duration_ms=1))
    assert store.share(lock("User:alice"))
    assert store.release(account_key("User:gone"), duration_ms=1) is False
    removed: list[int] = []

    def spent() -> bool:  # until every 1-ms lock has ended by the store's clock and been deleted
        removed.append(store.remove_ended())
        return sum(removed) == 150

    eventually(spent)
    assert store.remove_ended() == 0
    assert store.locked_ms(account_key("User:alice")) > 0
    assert [found.key for found in store.in_force_locks()] == [account_key("User:alice")]


def test_only_locks_in_force_count_towards_the_bound(lockouts: Lockouts) -> None:
    store = lockouts.make("replica-a", max_shared=20)
    for n in range(20):
        assert store.share(lock(f"User:u{n}", duration_ms=1))
    eventually(lambda: all(store.locked_ms(account_key(f"User:u{n}")) == 0 for n in range(20)))
    assert store.share(lock("User:alice"))  # the 20 ended ones do not count
    for n in range(19):
        assert store.share(lock(f"User:v{n}"))

    assert not store.share(lock("User:bob"))  # 20 in force: kept by the replica, nothing written

    assert store.locked_ms(account_key("User:bob")) == 0
    assert len(store.in_force_locks()) == 20
    store.remove_ended()
    assert len(store.in_force_locks()) == 20


def test_a_release_reaches_every_replica(lockouts: Lockouts) -> None:
    first, second = lockouts.make("replica-a"), lockouts.make("replica-b")
    heard: list[tuple[str, str]] = []
    first.on_released(lambda key: heard.append(("first", key)))
    second.on_released(lambda key: heard.append(("second", key)))
    key = account_key("User:alice")
    assert first.share(lock("User:alice"))
    eventually(lambda: second.locked_ms(key) > 0)

    assert second.release(key, DURATION) is True

    assert second.locked_ms(key) == 0  # at once on the releasing replica
    assert ("second", key) in heard  # its own listeners, at once
    eventually(lambda: first.locked_ms(key) == 0)
    eventually(lambda: set(heard) == {("first", key), ("second", key)})  # a replica may hear its own twice
    assert first.release(key, DURATION) is False  # released already


def test_an_operator_lists_the_locks_in_force_from_the_store(lockouts: Lockouts) -> None:
    """What ``kts lockout list`` reads, in a process of its own: the locks in force by the store's clock, each
    with the account it names where the store keeps names (None where it keeps the key alone)."""
    replica = lockouts.make("replica-a")
    assert replica.share(lock("User:alice"))
    assert replica.share(lock("User:gone", duration_ms=1))
    assert replica.share(lock("User:bob"))
    assert replica.release(account_key("User:bob"), DURATION) is True
    eventually(lambda: replica.locked_ms(account_key("User:gone")) == 0)

    (found,) = lockouts.make("operator").in_force_locks()

    assert found.key == account_key("User:alice") and found.account in (None, "User:alice")
    assert DURATION - 30_000 < found.remaining_ms <= DURATION
