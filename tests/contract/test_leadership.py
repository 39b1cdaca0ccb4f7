"""The leadership contract, run against every implementation: the ZooKeeper election (a real server), the
database lease (DbLeadership on SQLite and a real PostgreSQL) and memory (contenders of one process under one
lease). Three replicas contend: exactly one works at a time; a clean stop sets the leader's ``lost``, its work
returns, and another leads; a replica that starts later waits behind the leader; a duty that fails ends its term
and the replica contends again. What one implementation alone does (a session that expires, a lease that cannot
be renewed, fencing, a leader killed with SIGKILL) stays in its own suite."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from app.storage.memory.leadership import MemoryLeadership, MemoryLease
from app.storage.sql.leadership import DbLeadership
from app.storage.zk.connection import ZkConnection
from app.storage.zk.election import Leadership
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually
from tests.engines import migrated_database
from tests.work_log import WorkLog

IDENTIFIERS = ("replica-a", "replica-b", "replica-c")
Work = Callable[[threading.Event], None]


@dataclass
class Contenders:
    """``make(identifier, work)``: a replica's leadership, not started; stopped at the test's end."""

    name: str
    make: Callable[[str, Work], Any]
    made: list[Any] = field(default_factory=list)


def _zookeeper(request: pytest.FixtureRequest) -> Iterator[Contenders]:
    connect: str = request.getfixturevalue("zk_connect")
    connections: list[ZkConnection] = []

    def make(identifier: str, work: Work) -> Leadership:
        connection = ZkConnection(connect, session_timeout_ms=4000)
        connection.start()
        connections.append(connection)
        return Leadership(connection, KtsZNodes.SWEEPER_ELECTION, identifier, work)

    contenders = Contenders("zookeeper", make)
    yield contenders
    _stop_all(contenders)
    for connection in connections:
        connection.stop()


def _database(request: pytest.FixtureRequest, url: str) -> Iterator[Contenders]:
    engines: Callable[[str], Engine] = request.getfixturevalue("engines")

    def make(identifier: str, work: Work) -> DbLeadership:
        return DbLeadership(engines(url), "test-leadership", identifier, work, lease_ms=4000)

    contenders = Contenders(url.partition(":")[0], make)
    yield contenders
    _stop_all(contenders)


def _memory() -> Iterator[Contenders]:
    lease = MemoryLease()
    contenders = Contenders("memory", lambda identifier, work: MemoryLeadership(identifier, work, lease=lease))
    yield contenders
    _stop_all(contenders)


def _stop_all(contenders: Contenders) -> None:
    stoppers = [threading.Thread(target=leadership.stop) for leadership in contenders.made]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        stopper.join()


@pytest.fixture(params=["zookeeper", "sqlite", "postgresql", "memory"])
def contenders(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Contenders]:
    if request.param == "zookeeper":
        yield from _zookeeper(request)
    elif request.param in ("sqlite", "postgresql"):
        yield from _database(request, migrated_database(request, tmp_path, request.param))
    else:
        yield from _memory()


def _start(contenders: Contenders, identifier: str, work: Work) -> Any:
    leadership = contenders.make(identifier, work)
    contenders.made.append(leadership)
    leadership.start()
    return leadership


@pytest.fixture
def work_log() -> WorkLog:
    return WorkLog()


@pytest.fixture
def replicas(contenders: Contenders, work_log: WorkLog) -> dict[str, Any]:
    return {identifier: _start(contenders, identifier, work_log.work_for(identifier)) for identifier in IDENTIFIERS}


def _leader(work_log: WorkLog, replicas: dict[str, Any]) -> Any:
    eventually(lambda: work_log.current is not None)
    identifier = work_log.current
    assert identifier is not None
    return replicas[identifier]


def test_exactly_one_replica_works_at_a_time_and_a_clean_stop_hands_over(
    work_log: WorkLog, replicas: dict[str, Any]
) -> None:
    first = _leader(work_log, replicas)
    assert [leadership for leadership in replicas.values() if leadership.is_leader] == [first]

    first.stop()

    assert not first.is_leader
    assert work_log.ended[0] == (work_log.leaders[0], True)  # its work saw ``lost`` and returned
    eventually(lambda: work_log.current not in (None, work_log.leaders[0]))
    second = _leader(work_log, replicas)
    second.stop()
    third = _leader(work_log, replicas)
    assert {first, second, third} == set(replicas.values())
    assert len(work_log.leaders) == 3 and set(work_log.leaders) == set(IDENTIFIERS)
    assert work_log.max_active == 1  # never two at once across both hand-overs


def test_a_replica_that_starts_later_waits_behind_the_current_leader(
    contenders: Contenders, work_log: WorkLog, replicas: dict[str, Any]
) -> None:
    leader = _leader(work_log, replicas)
    late = _start(contenders, "replica-late", work_log.work_for("replica-late"))
    for other in replicas.values():
        if other is not leader:
            other.stop()

    assert work_log.current == work_log.leaders[0] and leader.is_leader and not late.is_leader

    leader.stop()

    eventually(lambda: work_log.current == "replica-late")
    assert work_log.max_active == 1


def test_a_duty_that_fails_ends_its_term_and_the_replica_contends_again(contenders: Contenders) -> None:
    runs: list[int] = []

    def failing(lost: threading.Event) -> None:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("the duty's own bug")
        lost.wait(60)

    leadership = _start(contenders, "replica-a", failing)

    eventually(lambda: len(runs) == 2 and leadership.is_leader)
