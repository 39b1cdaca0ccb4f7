"""What the ZooKeeper election alone does, on a real ZooKeeper: three replicas, each on its own session, contend
under one path; the cases every leadership passes (one at a time, a clean hand-over, a late starter, a failed
duty) are the contract suite's (tests/contract/test_leadership.py). Here: the contenders are listed leader
first; leadership moves on when the leader's session goes, closes or ZooKeeper restarts, and the old leader's
``lost`` event tells its work to return."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.storage.zk.connection import ZkConnection
from app.storage.zk.election import Leadership
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually
from tests.work_log import WorkLog

IDENTIFIERS = ("replica-a", "replica-b", "replica-c")


class Replica:
    def __init__(self, connect: str, identifier: str, work_log: WorkLog) -> None:
        self.identifier = identifier
        self.zk = ZkConnection(connect, session_timeout_ms=4000)
        self.zk.start()
        self.leadership = Leadership(self.zk, KtsZNodes.SWEEPER_ELECTION, identifier, work_log.work_for(identifier))
        self.zk_stopped = False

    def stop_session(self) -> None:
        self.zk_stopped = True
        self.zk.stop()


@pytest.fixture
def work_log() -> WorkLog:
    return WorkLog(hold_s=30)


@pytest.fixture
def replicas(zk_connect: str, work_log: WorkLog) -> Iterator[dict[str, Replica]]:
    started = {identifier: Replica(zk_connect, identifier, work_log) for identifier in IDENTIFIERS}
    for replica in started.values():
        replica.leadership.start()
    yield started
    stoppers = [threading.Thread(target=replica.leadership.stop) for replica in started.values()]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        stopper.join()
    for replica in started.values():
        if not replica.zk_stopped:
            replica.zk.stop()


def _leader(work_log: WorkLog, replicas: dict[str, Replica], timeout_s: float = 5.0) -> Replica:
    eventually(lambda: work_log.current is not None, timeout_s=timeout_s)
    identifier = work_log.current
    assert identifier is not None
    return replicas[identifier]


def test_contenders_lists_every_replicas_identifier_leader_first(
    work_log: WorkLog, replicas: dict[str, Replica]
) -> None:
    leader = _leader(work_log, replicas)

    eventually(lambda: all(sorted(r.leadership.contenders()) == sorted(IDENTIFIERS) for r in replicas.values()))
    for replica in replicas.values():
        assert replica.leadership.contenders()[0] == leader.identifier

    leader.leadership.stop()
    remaining = [replica for replica in replicas.values() if replica is not leader]
    eventually(lambda: sorted(remaining[0].leadership.contenders()) == sorted(r.identifier for r in remaining))


def test_when_the_leaders_session_closes_its_work_sees_lost_and_another_replica_leads(
    work_log: WorkLog, replicas: dict[str, Replica]
) -> None:
    old = _leader(work_log, replicas)

    old.stop_session()

    eventually(lambda: (old.identifier, True) in work_log.ended)  # ``lost`` was set and the work returned
    assert not old.leadership.is_leader
    eventually(lambda: work_log.current not in (None, old.identifier), timeout_s=5)
    new = _leader(work_log, replicas)
    assert new is not old
    assert work_log.leaders == [old.identifier, new.identifier]
    alive = next(replica for replica in replicas.values() if replica is not new and replica is not old)
    eventually(lambda: sorted(alive.leadership.contenders()) == sorted((new.identifier, alive.identifier)))


def test_a_leader_whose_session_expired_contends_again_and_can_lead_later(
    zk_connect: str, work_log: WorkLog, replicas: dict[str, Replica]
) -> None:
    old = _leader(work_log, replicas)
    session_id, password = old.zk.client.client_id
    twin = KazooClient(hosts=zk_connect.partition("/")[0], client_id=(session_id, password))
    twin.start(10)
    twin.stop()  # closing the session from another connection expires it for the leader
    twin.close()

    eventually(lambda: (old.identifier, True) in work_log.ended)
    eventually(lambda: work_log.current not in (None, old.identifier), timeout_s=5)
    eventually(lambda: old.zk.connected and old.identifier in old.leadership.contenders(), timeout_s=10)
    for replica in replicas.values():
        if replica is not old:
            replica.leadership.stop()

    eventually(lambda: work_log.current == old.identifier, timeout_s=5)
    assert work_log.leaders[0] == work_log.leaders[-1] == old.identifier


def test_after_a_zookeeper_restart_the_leaders_work_returns_and_exactly_one_replica_leads_again(
    tmp_path: Path,
) -> None:
    zookeeper = EmbeddedZooKeeper(tmp_path / "zk")
    zookeeper.start()
    work_log = WorkLog(hold_s=30)
    started: list[Replica] = []
    try:
        started = [Replica(f"{zookeeper.connect_string}/kts", name, work_log) for name in IDENTIFIERS[:2]]
        for replica in started:
            replica.leadership.start()
        eventually(lambda: work_log.current is not None)
        first = work_log.current

        zookeeper.stop()
        eventually(lambda: (first, True) in work_log.ended, timeout_s=10)  # suspended: assume leadership lost
        zookeeper.start()  # same port, same data directory

        eventually(lambda: work_log.current is not None and len(work_log.leaders) >= 2, timeout_s=15)
        time.sleep(0.3)
        assert len(work_log.active) == 1
    finally:
        for replica in started:
            replica.leadership.stop()
            replica.zk.stop()
        zookeeper.stop()
