"""Writing and reading audit events with SQLAlchemy Core (SQLite or PostgreSQL)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, and_, bindparam, delete, func, insert, select, update

from app.domain.audit import JOB_COLUMNS, AuditEvent, EventQuery, Outcome, RequestContext, StoredEvent
from app.domain.clock import Clock
from app.domain.token_job import JOB_KEYS, TokenJob
from app.storage.audit import migrations
from app.storage.audit.database import translated_db_errors
from app.storage.audit.group_commit import Ambiguous, GroupCommitter
from app.storage.audit.safe_text import safe_details, safe_text
from app.storage.audit.tables import STRING_LIMITS
from app.storage.audit.tables import audit_events as events
from app.storage.sql.prepared import Prepared

log = logging.getLogger(__name__)


class SqlAuditLog:
    def __init__(self, engine: Engine, *, service_id: str, clock: Clock) -> None:
        self._engine = engine
        self._service_id = service_id
        self._clock = clock
        self._writes = GroupCommitter(engine)

    def event_row(self, event: AuditEvent, context: RequestContext) -> dict[str, Any]:
        """The storable row of ``event``, stamped now by this replica (also for writers that put an event in
        a transaction of their own, app/storage/sql/token_requesters.py)."""
        return self.event_rows([event], context)[0]

    def event_rows(self, batch: list[AuditEvent], context: RequestContext) -> list[dict[str, Any]]:
        """``event_row`` of each of ``batch``, stamped at one instant (they are committed together). What the
        events share (the stamp, this replica, the request, a principal named again) is made storable once: a
        sweep writes its 100k rows in batches of 500 events, most of whose columns are the same."""
        shared = {
            "timestamp": self._clock.now_ms(),
            "service_id": _column_text("service_id", self._service_id),
            "request_id": _column_text("request_id", context.request_id),
            "client_address": _column_text("client_address", context.client_address),
        }
        storable: dict[tuple[str, str], str] = {}  # (column, value): the value made storable

        def text(column: str, value: str | None) -> str | None:
            if value is None:
                return None
            found = storable.get((column, value))
            if found is None:
                found = storable[column, value] = safe_text(value, STRING_LIMITS[column])
            return found

        return [
            {
                **shared,
                "action": text("action", event.action.value),
                "outcome": text("outcome", event.outcome.value),
                "principal": text("principal", event.principal),
                "owner": text("owner", event.owner),
                "token_requester": text("token_requester", event.token_requester),
                "token_id": _column_text("token_id", event.token_id),  # each event's own: nothing to share
                "error_code": event.error_code,
                "details": _details_json(event.details),
                **(
                    _NO_JOB
                    if event.job is None
                    else {key: text(key, value) for key, value in _job_columns(event.job).items()}
                ),
            }
            for event in batch
        ]

    @property
    def engine(self) -> Engine:
        """The database (the Kafka-protocol backend reads who asked for each token from it)."""
        return self._engine

    def ping(self) -> None:
        with translated_db_errors(), self._engine.connect() as connection:
            connection.execute(select(1))

    def migrate(self, *, auto: bool) -> None:
        """Bring the schema to this version's (``auto``), or check that it is there; logs where and which."""
        migrations.ensure_schema(self._engine, auto_migrate=auto)
        where = self._engine.url.render_as_string(hide_password=True)
        log.info("audit database %s at schema %s", where, migrations.HEAD_REVISION)

    def append(self, event: AuditEvent, context: RequestContext) -> int:
        """Insert one event and commit; returns its id. Raises StoreUnavailable when the database is down."""
        return self._writes.write(_APPEND, self.event_row(event, context))

    def append_many(
        self, batch: list[AuditEvent], context: RequestContext, *, succeeded: Sequence[int] = ()
    ) -> list[int]:
        """Insert several events in one transaction (one commit); ids in the order given. The events
        ``succeeded`` (pending ones; the others are left alone) are marked succeeded in the same transaction."""
        rows = self.event_rows(batch, context)
        ids = list(succeeded)

        def write(connection: Connection) -> list[int]:
            for start in range(0, len(ids), SUCCEED_CHUNK):
                connection.execute(_SUCCEED, {"ids": ids[start : start + SUCCEED_CHUNK]})
            return list(_APPEND.execute(connection, rows)) if rows else []

        return self._writes.run(write)

    def complete(self, event_id: int, event: AuditEvent) -> bool:
        """Settle a pending event; False when it was no longer pending (reconciliation got there first)."""
        return self._writes.write(_SETTLE, _settling(event_id, event))

    def complete_many(self, settled: list[tuple[int, AuditEvent]]) -> int:
        """Settle several pending events in one transaction; returns how many were still pending."""
        parameters = [_settling(event_id, event) for event_id, event in settled]
        return self._writes.run(lambda connection: _SETTLE.settled_count(connection, parameters))

    def pending(self, *, older_than_ms: int, service_id: str | None = None) -> list[StoredEvent]:
        """Pending events written before ``older_than_ms`` (or any age for ``service_id``'s own)."""
        condition = events.c.outcome == Outcome.PENDING.value
        if service_id is not None:
            own = events.c.service_id == _column_text("service_id", service_id)
            condition = and_(condition, (events.c.timestamp < older_than_ms) | own)
        else:
            condition = and_(condition, events.c.timestamp < older_than_ms)
        return self._select(select(events).where(condition).order_by(events.c.id))

    def query(self, query: EventQuery) -> list[StoredEvent]:
        conditions = []
        for column, value in (
            (events.c.token_id, query.token_id),
            (events.c.principal, query.principal),
            (events.c.action, query.action),
            (events.c.outcome, query.outcome),
            *((events.c[name], value) for name, value in _job_columns(query.job).items()),
        ):
            if value is not None:  # stored values were made storable, so the filter is too
                conditions.append(column == _column_text(column.name, value))
        if query.since is not None:
            conditions.append(events.c.timestamp >= query.since)
        if query.until is not None:
            conditions.append(events.c.timestamp < query.until)
        if query.before_id is not None:
            conditions.append(events.c.id < query.before_id)
        statement = select(events).where(*conditions).order_by(events.c.id.desc()).limit(query.limit)
        return self._select(statement)

    def is_pending(self, event_id: int) -> bool | None:
        """True/False for a known event, None when no event has that id."""
        rows = self._select(select(events).where(events.c.id == event_id))
        return None if not rows else rows[0].outcome == Outcome.PENDING.value

    def delete_before(self, timestamp_ms: int, limit: int) -> int:
        """Delete up to ``limit`` settled events written before ``timestamp_ms``, oldest first, in one
        transaction (pending events are kept: the reconciler settles them); how many."""
        oldest = (
            select(events.c.id)
            .where(events.c.timestamp < timestamp_ms, events.c.outcome != Outcome.PENDING.value)
            .order_by(events.c.id)
            .limit(limit)
        )
        statement = delete(events).where(events.c.id.in_(oldest.scalar_subquery()))
        return self._writes.run(lambda connection: int(connection.execute(statement).rowcount))

    def _select(self, statement: Any) -> list[StoredEvent]:
        with translated_db_errors(), self._engine.connect() as connection:
            rows = connection.execute(statement).mappings().all()
        return [
            StoredEvent(**{key: row[key] for key in row.keys() if key != "details"}, details=json.loads(row["details"]))
            for row in rows
        ]


def completion_statement() -> Any:
    """Settle the event ``event_id`` if it is still pending, with ``completion_parameters``; a token id
    given replaces the one the pending event named (on a cluster that picks ids, the real one)."""
    return (
        update(events)
        .where(and_(events.c.id == bindparam("event_id"), events.c.outcome == Outcome.PENDING.value))
        .values(
            outcome=bindparam("new_outcome"),
            error_code=bindparam("new_error_code"),
            details=bindparam("new_details"),
            token_id=func.coalesce(bindparam("new_token_id"), events.c.token_id),
        )
    )


def completion_parameters(event: AuditEvent) -> dict[str, Any]:
    """What settling a pending event writes (the ``new_*`` parameters of ``complete_many``'s statement)."""
    return {
        "new_outcome": _column_text("outcome", event.outcome.value),
        "new_error_code": event.error_code,
        "new_details": _details_json(event.details),
        "new_token_id": _column_text("token_id", event.token_id),
    }


class _Append:
    """Appending events, as one statement for every event of a group commit (ids in the order given).

    PostgreSQL: one INSERT ... RETURNING, whose rows SQLAlchemy sends many at a time and sorts back into the order
    given. SQLite: a plain executemany, then the last id; SQLAlchemy cannot tell SQLite's RETURNING rows apart and
    inserts one row per statement, which took a third more CPU than the executemany (a sweep inserts 100k rows).
    The ids are the last one's and those before it: SQLite gives a new row the largest rowid plus one, and the
    transaction is the only writer (SQLite's write lock), so the rows of an executemany get consecutive ids."""

    returning = insert(events).returning(events.c.id, sort_by_parameter_order=True)
    plain = Prepared(insert(events), [column.name for column in events.c if column is not events.c.id])
    last_id = "SELECT last_insert_rowid()"

    def execute(self, connection: Connection, rows: list[dict[str, Any]]) -> Sequence[int]:
        if connection.dialect.name != "sqlite":
            return [int(row[0]) for row in connection.execute(self.returning, rows)]
        if len(rows) == 1:  # a lone insert tells its own id: no second statement
            last = self.plain.execute(connection, rows[0]).lastrowid
        else:
            self.plain.execute(connection, rows)
            last = connection.exec_driver_sql(self.last_id).scalar_one()
        return range(int(last) - len(rows) + 1, int(last) + 1)


class _Settle:
    """Settling pending events, as one UPDATE executemany for every event of a group commit. Each settling
    answers whether its event was still pending: the usual batch settles all of its events, or none; one that
    settled only some cannot tell which (``Ambiguous``), and its events are settled again one by one."""

    statement = Prepared(
        completion_statement(), ["event_id", "new_outcome", "new_error_code", "new_details", "new_token_id"]
    )

    def settled_count(self, connection: Connection, parameters: list[dict[str, Any]]) -> int:
        if not parameters:
            return 0
        if len(parameters) > 1 and not connection.dialect.supports_sane_multi_rowcount:
            return sum(int(self.statement.execute(connection, one).rowcount) for one in parameters)
        return int(self.statement.execute(connection, parameters[0] if len(parameters) == 1 else parameters).rowcount)

    def execute(self, connection: Connection, parameters: list[dict[str, Any]]) -> Sequence[bool]:
        settled = self.settled_count(connection, parameters)
        if settled not in (0, len(parameters)):
            raise Ambiguous(f"{settled} of {len(parameters)} events were still pending")
        return [settled > 0] * len(parameters)


_APPEND = _Append()
_SETTLE = _Settle()
# Pending events that succeeded unchanged, settled by one statement for a whole batch: settling each with its
# own row of parameters (its details encoded again) took two thirds of the samples appending took, in a profile
# of a sweep of 100k tokens. At most SUCCEED_CHUNK ids a statement: SQLite before 3.32 binds at most 999 values.
SUCCEED_CHUNK = 500
_SUCCEED = (
    update(events)
    .where(events.c.id.in_(bindparam("ids", expanding=True)), events.c.outcome == Outcome.PENDING.value)
    .values(outcome=Outcome.SUCCEEDED.value)
)


def _settling(event_id: int, event: AuditEvent) -> dict[str, Any]:
    return {"event_id": event_id, **completion_parameters(event)}


def _job_columns(job: TokenJob | None) -> dict[str, str | None]:
    """The job's columns (``job_framework``, ``job_id``, ...), all null without a job."""
    return {
        column: None if job is None else getattr(job, key) for column, key in zip(JOB_COLUMNS, JOB_KEYS, strict=True)
    }


def _column_text(column: str, value: str | None) -> str | None:
    return None if value is None else safe_text(value, STRING_LIMITS[column])


def _details_json(details: dict[str, Any]) -> str:
    return _DETAILS_ENCODER.encode(safe_details(details))


# ``json.dumps`` with options builds an encoder at every call: one, made once, encodes every event's details.
_DETAILS_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
_NO_JOB: dict[str, str | None] = dict.fromkeys(JOB_COLUMNS)


class NullAuditLog:
    """Records nothing: for benchmarks that measure what auditing costs. Never used by ``kts serve``."""

    def __init__(self) -> None:
        self._next = 0

    def ping(self) -> None:
        return None

    def append(self, event: AuditEvent, context: RequestContext) -> int:
        self._next += 1
        return self._next

    def append_many(
        self, batch: list[AuditEvent], context: RequestContext, *, succeeded: Sequence[int] = ()
    ) -> list[int]:
        return [self.append(event, context) for event in batch]

    def complete(self, event_id: int, event: AuditEvent) -> bool:
        return True

    def complete_many(self, settled: list[tuple[int, AuditEvent]]) -> int:
        return len(settled)

    def pending(self, *, older_than_ms: int, service_id: str | None = None) -> list[StoredEvent]:
        return []

    def query(self, query: EventQuery) -> list[StoredEvent]:
        return []

    def is_pending(self, event_id: int) -> bool | None:
        return None

    def delete_before(self, timestamp_ms: int, limit: int) -> int:
        return 0
