"""What leadership through a lease row (app/storage/sql/leadership.py) alone does, on a real PostgreSQL and on
SQLite; the cases every leadership passes (one at a time, a clean hand-over, a failed duty) are the contract
suite's (tests/contract/test_leadership.py). A leader that cannot renew gives up before anyone else can
take over; a leader whose lease is taken sees ``lost``; ``holds`` fences a deposed leader's writes; and on
PostgreSQL, replicas as separate processes fail over when the leader is killed with SIGKILL."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text, update

from app.storage.sql.db_time import db_now_ms
from app.storage.sql.leadership import DbLeadership, LeaseTable, Term, holds
from app.storage.sql.replicas import ReplicaRegistry
from app.storage.sql.tables import leader_leases, replicas
from tests.api.helpers import eventually
from tests.work_log import WorkLog

ROOT = Path(__file__).resolve().parents[4]
NAME = "test-leadership"
IDENTIFIERS = ("replica-a", "replica-b", "replica-c")


class RecordingEvent(threading.Event):
    """``lost``, remembering when it was first set."""

    def __init__(self) -> None:
        super().__init__()
        self.set_at: float | None = None

    def set(self) -> None:
        if self.set_at is None:
            self.set_at = time.monotonic()
        super().set()

    def clear(self) -> None:
        self.set_at = None
        super().clear()


@pytest.fixture
def work_log() -> WorkLog:
    return WorkLog()


@pytest.fixture
def contenders(
    coordination_db: str, engines: Callable[[str], Engine], work_log: WorkLog
) -> Iterator[dict[str, DbLeadership]]:
    started = {
        identifier: DbLeadership(
            engines(coordination_db), NAME, identifier, work_log.work_for(identifier), lease_ms=4000
        )
        for identifier in IDENTIFIERS
    }
    for leadership in started.values():
        leadership._lost = RecordingEvent()
        leadership.start()
    yield started
    for leadership in started.values():
        leadership.stop()


def _leader(work_log: WorkLog, contenders: dict[str, DbLeadership]) -> DbLeadership:
    eventually(lambda: work_log.current is not None)
    identifier = work_log.current
    assert identifier is not None
    return contenders[identifier]


def test_a_leader_that_cannot_renew_gives_up_before_another_takes_over(
    work_log: WorkLog, contenders: dict[str, DbLeadership]
) -> None:
    """Its renewals hang (the database unreachable from it alone): its watchdog sets ``lost`` from its own
    deadline, and only after that can the lease, run out by the database's clock, go to another."""
    old = _leader(work_log, contenders)
    hung = threading.Event()

    def stuck(_term: Term) -> bool:
        hung.wait(120)
        return False

    old._table.renew = stuck  # type: ignore[method-assign]

    eventually(lambda: work_log.current not in (None, old.identifier))
    new_started = next(
        started
        for identifier, started in zip(work_log.leaders, work_log.started, strict=True)
        if identifier != old.identifier
    )
    lost = old._lost
    assert isinstance(lost, RecordingEvent) and lost.set_at is not None
    assert lost.set_at < new_started
    assert (old.identifier, True) in work_log.ended
    assert work_log.max_active == 1
    hung.set()


def test_a_leader_whose_lease_is_taken_sees_lost_at_its_next_renewal(
    coordination_db: str, engines: Callable[[str], Engine], work_log: WorkLog, contenders: dict[str, DbLeadership]
) -> None:
    old = _leader(work_log, contenders)
    with engines(coordination_db).begin() as connection:  # an operator hands the lease to a replica of its choice
        connection.execute(update(leader_leases).values(holder="elsewhere", generation=leader_leases.c.generation + 1))

    eventually(lambda: (old.identifier, True) in work_log.ended)
    assert not old.is_leader


def test_holds_fences_the_writes_of_a_deposed_leader(coordination_db: str, engines: Callable[[str], Engine]) -> None:
    engine = engines(coordination_db)
    first = LeaseTable(engine, NAME, "first", 60_000)
    second = LeaseTable(engine, NAME, "second", 60_000)
    term = first.acquire()
    assert term is not None and second.acquire() is None  # held: nobody else
    with engine.connect() as connection:
        assert holds(connection, term, lock=False)

    first.release(term)
    successor = second.acquire()

    assert successor is not None and successor.generation == term.generation + 1
    with engine.connect() as connection:
        assert not holds(connection, term, lock=False)
        assert holds(connection, successor, lock=False)
    assert first.acquire() is None


def test_on_postgresql_a_fenced_write_keeps_a_successor_out_until_it_commits(
    postgres_db: str, engines: Callable[[str], Engine]
) -> None:
    """A duty that checked its term with ``holds`` keeps the lease row until its transaction ends: even once
    the lease has run out, a successor's acquisition waits for that transaction, so the duty's write cannot
    land after the successor's first one."""
    engine = engines(postgres_db)
    leader = LeaseTable(engine, NAME, "leader", 1500)
    term = leader.acquire()
    assert term is not None
    acquired: queue.Queue[Term | None] = queue.Queue()
    with engine.begin() as duty:
        assert holds(duty, term)  # FOR SHARE: the row is held until this transaction ends

        def lease_ran_out() -> bool:
            with engine.connect() as connection:
                expires = connection.execute(select(leader_leases.c.expires_at_ms)).scalar_one()
                return bool(connection.execute(select(db_now_ms())).scalar_one() > expires)

        eventually(lease_ran_out)
        successor = LeaseTable(engine, NAME, "successor", 60_000)
        threading.Thread(target=lambda: acquired.put(successor.acquire()), daemon=True).start()

        def successor_waits_on_the_lock() -> bool:
            with engine.connect() as connection:
                waiting = connection.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    )
                ).scalar_one()
            return bool(waiting)

        eventually(successor_waits_on_the_lock)
        assert acquired.empty()
    taken = acquired.get(timeout=60)
    assert taken is not None and taken.generation == term.generation + 1


def test_replicas_as_processes_fail_over_when_the_leader_is_killed(
    postgres_db: str, engines: Callable[[str], Engine]
) -> None:
    """Three replica processes; the leader is killed with SIGKILL (no clean hand-over, no connection closed
    politely): another leads once the lease has run out by the database's clock, with a newer generation,
    and the dead replica drops out of the live count."""
    lease_ms = 3000
    lines: queue.Queue[tuple[float, str]] = queue.Queue()
    processes: dict[str, subprocess.Popen[str]] = {}

    def follow(process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put((time.monotonic(), line.strip()))

    for identifier in IDENTIFIERS:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.storage.sql.replica_process",
                postgres_db,
                identifier,
                str(lease_ms),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=follow, args=(process,), daemon=True).start()
        processes[identifier] = process
    engine = engines(postgres_db)
    try:
        first = _next_leader(lines)
        eventually(lambda: _live_replicas(engine) == 3, timeout_s=60)
        dead = next(identifier for identifier in IDENTIFIERS if first[1].startswith(identifier + "#"))
        killed_at = time.monotonic()
        processes[dead].send_signal(signal.SIGKILL)
        processes[dead].wait(30)

        second = _next_leader(lines)
        took_s = second[0] - killed_at

        assert not second[1].startswith(dead + "#")
        assert second[2] == first[2] + 1
        eventually(lambda: _live_replicas(engine) == 2, timeout_s=60)
        with engine.connect() as connection:
            holder = connection.execute(select(leader_leases.c.holder)).scalar_one()
        assert holder == second[1]
        print(f"\nfailover after SIGKILL observed in {took_s:.1f} s (lease {lease_ms / 1000:.0f} s)")
    finally:
        for process in processes.values():
            if process.poll() is None:
                assert process.stdin is not None
                process.stdin.close()
        for process in processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _next_leader(lines: queue.Queue[tuple[float, str]]) -> tuple[float, str, int]:
    """The next ``lead`` line: when it arrived, the instance, the generation."""
    while True:
        arrived, line = lines.get(timeout=120)
        parts = line.split()
        if parts[0] == "lead":
            return arrived, parts[1], int(parts[2])


def _live_replicas(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.execute(
                select(func.count()).select_from(replicas).where(replicas.c.expires_at_ms > db_now_ms())
            ).scalar_one()
        )


def test_the_registry_counts_live_replicas_and_forgets_one_that_stopped(
    coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    first = ReplicaRegistry(engines(coordination_db), service_id="kts-0", ttl_ms=60_000)
    second = ReplicaRegistry(engines(coordination_db), service_id="kts-0", ttl_ms=60_000)  # same service id
    first.start()
    second.start()
    try:
        assert first.instance_id != second.instance_id
        assert first.beat() == 2
        second.stop()
        assert first.beat() == 1
    finally:
        first.stop()
