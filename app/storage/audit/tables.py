"""The audit table, derived from ``EVENT_FIELDS``. Schema changes go through alembic revisions in
``migrations/``; a test holds this table and what the revisions create together."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text, text
from sqlalchemy.types import TypeEngine

from app.domain.audit import EVENT_FIELDS, JOB_COLUMNS, EventField, FieldType

metadata = MetaData()


def _sql_type(field: EventField) -> TypeEngine[Any]:
    match field.type:
        case FieldType.SERIAL:
            # BigInteger ids on PostgreSQL; SQLite needs INTEGER PRIMARY KEY for its rowid alias (autoincrement).
            return BigInteger().with_variant(Integer, "sqlite")
        case FieldType.INT64:
            return BigInteger()
        case FieldType.INT32:
            return Integer()
        case FieldType.STRING:
            return String(field.max_length)
        case FieldType.JSON_OBJECT:
            return Text()


def _column(field: EventField) -> Column[object]:
    if field.type is FieldType.SERIAL:
        return Column(field.name, _sql_type(field), primary_key=True, autoincrement=True)
    default = "{}" if field.type is FieldType.JSON_OBJECT else None
    return Column(field.name, _sql_type(field), nullable=field.nullable, default=default)


def _job_index(column: str) -> Index:
    """Partial: only the rows that name a job (a few token.create events) are in it, so the writes of every
    other event (reads, logins, sweeps) pay nothing for it. A filter ``column = value`` implies ``column IS
    NOT NULL``, which both SQLite and PostgreSQL see, so the index serves it. PostgreSQL's ``where`` is given by
    ``add_postgresql_options``."""
    return Index(f"ix_audit_events_{column}", column, sqlite_where=_present(column))


def _present(column: str) -> Any:
    return text(f"{column} IS NOT NULL")


audit_events = Table(
    "audit_events",
    metadata,
    *(_column(field) for field in EVENT_FIELDS),
    Index("ix_audit_events_timestamp", "timestamp"),
    Index("ix_audit_events_token_id", "token_id"),
    Index("ix_audit_events_principal", "principal"),
    Index("ix_audit_events_owner", "owner"),
    Index("ix_audit_events_action_outcome", "action", "outcome"),
    *(_job_index(name) for name in JOB_COLUMNS),
)

STRING_LIMITS: dict[str, int] = {field.name: field.max_length for field in EVENT_FIELDS if field.max_length is not None}
"""The longest text each string column holds."""


def add_postgresql_options() -> None:
    """The job indexes' ``where`` on PostgreSQL (the same as on SQLite), given once a PostgreSQL engine is made
    (app/storage/audit/database.py, through which every engine is made): a ``postgresql_*`` option names the dialect,
    and SQLAlchemy imports a dialect's package to check its options, some 18 ms of every start-up that uses SQLite
    (or no audit database) for nothing. Only PostgreSQL reads the option, and what alembic autogenerate compares there
    is the table as before."""
    for index in audit_events.indexes:
        column = index.name.removeprefix("ix_audit_events_") if index.name else None
        if column in JOB_COLUMNS and index.dialect_options["postgresql"].get("where") is None:
            index.dialect_options["postgresql"]["where"] = _present(column)
