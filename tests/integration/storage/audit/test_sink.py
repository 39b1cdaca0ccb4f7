"""SqlAuditLog on SQLite and PostgreSQL: append, complete, pending, queries and a cursor stable under inserts."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext
from app.domain.clock import SystemClock
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog

CONTEXT = RequestContext("req-1", "127.0.0.1")


@pytest.fixture
def log(any_audit_db: str) -> Iterator[SqlAuditLog]:
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    yield SqlAuditLog(engine, service_id="svc-a", clock=SystemClock())
    engine.dispose()


def _event(**fields: object) -> AuditEvent:
    base: dict[str, object] = {"action": Action.TOKEN_CREATE, "outcome": Outcome.PENDING, "principal": "User:alice"}
    return AuditEvent(**(base | fields))  # type: ignore[arg-type]


def test_append_complete_and_read_back(log: SqlAuditLog) -> None:
    event_id = log.append(_event(token_id="T1", owner="User:joe", details={"renewers": ["User:bob"]}), CONTEXT)
    assert log.is_pending(event_id) is True
    assert log.complete(event_id, _event(token_id="T1").ended(Outcome.SUCCEEDED, expiryTimestamp=5))
    assert log.complete(event_id, _event().ended(Outcome.FAILED)) is False  # only a pending event settles
    (row,) = log.query(EventQuery(token_id="T1"))
    assert (row.outcome, row.owner, row.service_id, row.request_id, row.client_address) == (
        "succeeded",
        "User:joe",
        "svc-a",
        "req-1",
        "127.0.0.1",
    )
    assert row.details == {"expiryTimestamp": 5}
    assert log.is_pending(event_id) is False
    assert log.is_pending(10**9) is None


def test_filters(log: SqlAuditLog) -> None:
    log.append(_event(outcome=Outcome.SUCCEEDED, token_id="A"), CONTEXT)
    log.append(_event(outcome=Outcome.DENIED, principal="User:mallory", error_code=65), CONTEXT)
    log.append(_event(action=Action.AUTHENTICATION, outcome=Outcome.DENIED, principal="User:mallory"), CONTEXT)
    assert len(log.query(EventQuery(principal="User:mallory"))) == 2
    assert [r.error_code for r in log.query(EventQuery(action="token.create", outcome="denied"))] == [65]
    newest = log.query(EventQuery(limit=1))[0]
    assert log.query(EventQuery(since=newest.timestamp + 1)) == []
    assert len(log.query(EventQuery(until=newest.timestamp + 1))) == 3


def test_pending_selection(log: SqlAuditLog) -> None:
    old = log.append(_event(), CONTEXT)
    assert [e.id for e in log.pending(older_than_ms=10**15)] == [old]
    assert log.pending(older_than_ms=0) == []
    assert [e.id for e in log.pending(older_than_ms=0, service_id="svc-a")] == [old]


def test_cursor_pages_are_stable_while_events_are_inserted(log: SqlAuditLog) -> None:
    for n in range(10):
        log.append(_event(token_id=f"T{n}"), CONTEXT)
    first = log.query(EventQuery(limit=4))
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            log.append(_event(token_id="late"), CONTEXT)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        second = log.query(EventQuery(limit=4, before_id=first[-1].id))
        third = log.query(EventQuery(limit=4, before_id=second[-1].id))
    finally:
        stop.set()
        thread.join()
    seen = [r.token_id for r in first + second + third]
    assert seen == [f"T{n}" for n in range(9, -1, -1)]


def test_long_values_are_cut_not_refused(log: SqlAuditLog) -> None:
    event_id = log.append(_event(principal="User:" + "x" * 5000, token_id="y" * 500), CONTEXT)
    assert log.is_pending(event_id)
