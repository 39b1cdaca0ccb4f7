"""``audit.retention.days`` on SQLite and a real PostgreSQL: the leader's duty deletes settled events older than
the retention, in batches, never a pending one and never a younger one; it stops between batches when
leadership is lost."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext
from app.service.audit_retention import DAY_MS, AuditRetention
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from tests.api.helpers import eventually
from tests.unit.fakes import NOW, FakeClock

CONTEXT = RequestContext("req-1", "192.0.2.1")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW - 40 * DAY_MS)


@pytest.fixture
def log(any_audit_db: str, clock: FakeClock) -> Iterator[SqlAuditLog]:
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    yield SqlAuditLog(engine, service_id="svc-a", clock=clock)
    engine.dispose()


def _fill(log: SqlAuditLog, clock: FakeClock, days_ago: int, count: int, outcome: Outcome) -> None:
    clock.now = NOW - days_ago * DAY_MS
    events = [AuditEvent(Action.AUTHENTICATION, outcome, principal=f"User:u{n}") for n in range(count)]
    log.append_many(events, CONTEXT)


def test_events_past_the_retention_are_deleted_in_batches_and_pending_ones_kept(
    log: SqlAuditLog, clock: FakeClock
) -> None:
    _fill(log, clock, days_ago=40, count=250, outcome=Outcome.DENIED)
    _fill(log, clock, days_ago=40, count=3, outcome=Outcome.PENDING)
    _fill(log, clock, days_ago=31, count=120, outcome=Outcome.SUCCEEDED)
    _fill(log, clock, days_ago=29, count=7, outcome=Outcome.SUCCEEDED)
    clock.now = NOW
    retention = AuditRetention(log, clock, days=30, batch=100)
    assert retention.apply() == 370
    left = log.query(EventQuery(limit=1000))
    assert sorted(event.outcome for event in left) == ["pending"] * 3 + ["succeeded"] * 7
    assert all(event.timestamp >= NOW - 30 * DAY_MS or event.outcome == "pending" for event in left)
    assert retention.apply() == 0  # run twice: harmless
    print("audit retention: 370 events past 30 days deleted in batches of 100; 3 pending and 7 younger kept")


def test_a_lost_leadership_stops_between_batches(log: SqlAuditLog, clock: FakeClock) -> None:
    _fill(log, clock, days_ago=40, count=50, outcome=Outcome.DENIED)
    clock.now = NOW
    lost = threading.Event()
    lost.set()
    assert AuditRetention(log, clock, days=30, batch=10).apply(lost) == 0
    run = threading.Thread(target=AuditRetention(log, clock, days=30, batch=10, interval_ms=60_000).run, args=(lost,))
    run.start()
    run.join(30)
    assert not run.is_alive()
    assert len(log.query(EventQuery(limit=1000))) == 50


def test_the_duty_deletes_at_once_then_waits_for_its_interval(log: SqlAuditLog, clock: FakeClock) -> None:
    _fill(log, clock, days_ago=40, count=30, outcome=Outcome.DENIED)
    clock.now = NOW
    lost = threading.Event()
    retention = AuditRetention(log, clock, days=30, batch=7, interval_ms=3_600_000)
    run = threading.Thread(target=retention.run, args=(lost,))
    run.start()
    try:
        eventually(lambda: log.query(EventQuery(limit=1000)) == [])
    finally:
        lost.set()
        run.join(30)
    assert not run.is_alive()
