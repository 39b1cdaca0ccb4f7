"""SqlAuditLog on SQLite and PostgreSQL: append, complete, pending, queries and a cursor stable under inserts."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from sqlalchemy import event

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext
from app.domain.clock import SystemClock
from app.domain.token_job import TokenJob
from app.storage.audit import migrations, sink
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from tests.api.helpers import eventually

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


ODD = "a\x00b\nc\x1b[31md\x7f\x85e\ud800f\udcff\u2028\\g"
"""NUL, a newline, an ANSI escape, DEL, a C1 control, a lone surrogate, a surrogate-escaped byte (invalid
UTF-8 as Python decodes it), a line separator, and a backslash kept as it is."""
ODD_STORED = "a\\x00b\\x0ac\\x1b[31md\\x7f\\x85e\\ud800f\\udcff\\u2028\\g"
ODD_CONTEXT = RequestContext("req\x00" + "r" * 100, "203.0.113.1\r\nforged: line")


def test_odd_values_in_every_field_are_stored_escaped(any_audit_db: str) -> None:
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    log = SqlAuditLog(engine, service_id="svc\x00a", clock=SystemClock())
    odd = _event(
        principal="User:" + ODD,
        owner="User:" + ODD,
        token_requester="User:" + ODD,
        token_id="T" + ODD,
        details={"user" + ODD: ["x" + ODD, 7, None, True], "nested": {ODD: ODD}},
    )
    single = log.append(odd, ODD_CONTEXT)
    log.append_many([odd, odd], ODD_CONTEXT)
    assert log.complete(single, odd.ended(Outcome.DENIED, error_code=58, why=ODD))
    rows = log.query(EventQuery(principal="User:" + ODD))  # the filter is escaped as the rows were
    assert len(rows) == 3
    for row in rows:
        assert (row.principal, row.owner, row.token_requester) == ("User:" + ODD_STORED,) * 3
        assert row.token_id == "T" + ODD_STORED
        assert row.service_id == "svc\\x00a"
        assert row.request_id == ("req\\x00" + "r" * 100)[:63] + "\u2026"
        assert row.client_address == "203.0.113.1\\x0d\\x0aforged: line"
    settled = next(row for row in rows if row.id == single)
    assert settled.outcome == "denied"
    assert settled.details == {
        "user" + ODD_STORED: ["x" + ODD_STORED, 7, None, True],
        "nested": {ODD_STORED: ODD_STORED},
        "why": ODD_STORED,
    }
    assert log.query(EventQuery(token_id="T" + ODD))[0].token_id == "T" + ODD_STORED
    engine.dispose()


def test_long_values_are_cut_to_their_column_with_a_marker(log: SqlAuditLog) -> None:
    long = "\u00e9" * 5000  # a two-byte UTF-8 character: limits count characters, as both databases do
    event_id = log.append(
        _event(principal=long, owner=long, token_requester=long, token_id=long, details={long: long}),
        RequestContext(long, long),
    )
    (row,) = log.query(EventQuery(principal=long))
    assert row.id == event_id
    for value, limit in (
        (row.principal, 1100),
        (row.owner, 1100),
        (row.token_requester, 1100),
        (row.token_id, 64),
        (row.request_id, 64),
        (row.client_address, 64),
    ):
        assert value == "\u00e9" * (limit - 1) + "\u2026"
    ((key, value),) = row.details.items()
    assert key == value == "\u00e9" * 1099 + "\u2026"


def test_ordinary_values_are_stored_unchanged(log: SqlAuditLog) -> None:
    plain = r"User:CN=Smith\, John,O=Ünïcode 例"  # a DN with an escaped comma: backslashes are kept
    log.append(_event(principal=plain, details={"note": plain, "tab-free": "a b"}), CONTEXT)
    (row,) = log.query(EventQuery(principal=plain))
    assert row.principal == plain and row.details == {"note": plain, "tab-free": "a b"}


def test_concurrent_writers_sharing_a_commit_all_land_whatever_their_values(log: SqlAuditLog) -> None:
    """Odd rows share group-commit batches with ordinary ones: every writer gets its id, none fails."""
    gate = threading.Barrier(8)
    ids: dict[int, int] = {}

    def writer(n: int) -> None:
        principal = "User:" + (ODD if n % 2 else f"w{n}") + "x" * (2000 * (n % 3 == 0))
        gate.wait()
        ids[n] = log.append(_event(principal=principal, token_id=f"C{n}"), ODD_CONTEXT if n % 2 else CONTEXT)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(ids) == list(range(8))
    for n in range(8):
        (row,) = log.query(EventQuery(token_id=f"C{n}"))
        assert row.id == ids[n]


def _batched(log: SqlAuditLog, writes: list[Callable[[], object]]) -> list[object]:
    """Run ``writes`` on threads that all queue behind one commit held open, so that they form one batch."""
    held, release = threading.Event(), threading.Event()

    def hold(_connection: object) -> None:
        held.set()
        release.wait(10)

    holder = threading.Thread(target=log._writes.run, args=(hold,))
    holder.start()
    held.wait(10)
    results: dict[int, object] = {}
    threads = [threading.Thread(target=lambda n=n: results.update({n: writes[n]()})) for n in range(len(writes))]
    for thread in threads:
        thread.start()
    eventually(lambda: len(log._writes._queue) == len(writes))
    release.set()
    for thread in [holder, *threads]:
        thread.join(30)
    return [results[n] for n in range(len(writes))]


def test_appends_and_settlings_sharing_a_commit_share_one_statement_each(log: SqlAuditLog) -> None:
    statements: list[str] = []
    commits: list[object] = []
    event.listen(log.engine, "before_cursor_execute", lambda *args: statements.append(args[2].split()[0]))
    event.listen(log.engine, "commit", commits.append)

    ids = _batched(log, [lambda n=n: log.append(_event(token_id=f"B{n}"), CONTEXT) for n in range(8)])
    # One INSERT with every row: RETURNING on PostgreSQL, an executemany and then the last id on SQLite.
    assert statements.count("INSERT") == 1
    assert len(commits) == 2  # the held commit, then the batch
    assert [log.query(EventQuery(token_id=f"B{n}"))[0].id for n in range(8)] == ids  # each its own id

    settled = _batched(log, [lambda i=i: log.complete(i, _event().ended(Outcome.SUCCEEDED)) for i in ids])
    assert settled == [True] * 8
    assert statements.count("UPDATE") == 1
    assert len(commits) == 4


def test_a_shared_settling_answers_each_event_whether_it_was_still_pending(log: SqlAuditLog) -> None:
    ids = [log.append(_event(token_id=f"S{n}"), CONTEXT) for n in range(6)]
    assert log.complete(ids[2], _event().ended(Outcome.FAILED, reconciled=True))  # the reconciler got there first

    settled = _batched(log, [lambda i=i: log.complete(i, _event().ended(Outcome.SUCCEEDED)) for i in ids])

    assert settled == [True, True, False, True, True, True]
    assert [log.query(EventQuery(token_id=f"S{n}"))[0].outcome for n in range(6)] == [
        "succeeded",
        "succeeded",
        "failed",
        "succeeded",
        "succeeded",
        "succeeded",
    ]


def test_a_batch_appended_with_the_settling_of_the_batch_before_shares_its_commit(log: SqlAuditLog) -> None:
    """The sweep's audit (app/service/audit.py ``MutationBatches``): one commit appends a batch pending and marks
    the batch before it succeeded, leaving alone an event no longer pending and every other field."""
    before = log.append_many([_event(token_id=f"P{n}", details={"expiryTimestamp": n}) for n in range(3)], CONTEXT)
    assert log.complete(before[1], _event().ended(Outcome.FAILED, reconciled=True))  # the reconciler got there first
    commits: list[object] = []
    event.listen(log.engine, "commit", commits.append)

    after = log.append_many([_event(token_id=f"N{n}") for n in range(2)], CONTEXT, succeeded=before)

    assert len(commits) == 1
    stored = {row.token_id: row for row in log.query(EventQuery(limit=10))}
    assert [stored[f"P{n}"].outcome for n in range(3)] == ["succeeded", "failed", "succeeded"]
    assert stored["P1"].details == {"reconciled": True}  # as the reconciler settled it
    assert [stored[f"P{n}"].details for n in (0, 2)] == [{"expiryTimestamp": 0}, {"expiryTimestamp": 2}]
    assert [stored[f"N{n}"].outcome for n in range(2)] == ["pending", "pending"]
    assert [stored[f"N{n}"].id for n in range(2)] == after

    assert log.append_many([], CONTEXT, succeeded=after) == []  # the last batch's settling alone
    assert [log.is_pending(event_id) for event_id in after] == [False, False]
    assert len(commits) == 2


def test_more_events_marked_succeeded_than_one_statement_binds_are_all_settled(
    log: SqlAuditLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sink, "SUCCEED_CHUNK", 2)
    ids = log.append_many([_event(token_id=f"C{n}") for n in range(5)], CONTEXT)

    log.append_many([], CONTEXT, succeeded=ids)

    assert [log.is_pending(event_id) for event_id in ids] == [False] * 5
    assert {row.outcome for row in log.query(EventQuery(limit=10))} == {"succeeded"}


def test_the_job_survives_settling_batching_and_reconciliation(log: SqlAuditLog) -> None:
    """The job is written with the pending event; settling it (by the request, in a batch, or by a reconciler,
    whose events carry no job) keeps it, and the job filters find it."""
    job = TokenJob(framework="spark", id="app-1", name="etl", user="joe")
    by_request = log.append(_event(token_id="T1", job=job), CONTEXT)
    by_reconciler = log.append(_event(token_id="T2", job=job), CONTEXT)
    batched = log.append_many([_event(token_id="T3", job=replace(job, user="ann"))], CONTEXT)
    log.append(_event(token_id="T4"), CONTEXT)
    assert log.complete(by_request, _event(token_id="T1", job=job).ended(Outcome.SUCCEEDED))
    assert log.complete_many([(by_reconciler, _event(token_id="T2").ended(Outcome.FAILED, reconciled=True))]) == 1
    log.append_many([], CONTEXT, succeeded=batched)

    found = {row.token_id: row for row in log.query(EventQuery(job=TokenJob(framework="spark")))}
    assert sorted(found) == ["T1", "T2", "T3"]
    assert (found["T2"].outcome, found["T2"].job_id, found["T2"].job_user) == ("failed", "app-1", "joe")
    assert [row.token_id for row in log.query(EventQuery(job=TokenJob(id="app-1", user="ann")))] == ["T3"]
    assert log.query(EventQuery(job=TokenJob(id="app-1", name="other"))) == []
    assert log.query(EventQuery(token_id="T4"))[0].job_framework is None


def test_a_batch_appended_answers_each_event_its_own_id(log: SqlAuditLog) -> None:
    """On SQLite the ids of a batch come from the last one (an executemany answers none): each must still be its
    own event's, after events appended before."""
    log.append(_event(token_id="Before"), CONTEXT)
    first = log.append_many([_event(token_id=f"First{n}") for n in range(5)], CONTEXT)
    second = log.append_many([_event(token_id=f"Second{n}") for n in range(300)], CONTEXT)

    assert [log.query(EventQuery(token_id=f"First{n}"))[0].id for n in range(5)] == first
    assert [log.query(EventQuery(token_id=f"Second{n}"))[0].id for n in range(300)] == second
    assert len({*first, *second}) == 305
