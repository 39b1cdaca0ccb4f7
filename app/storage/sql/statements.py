"""Statements whose SQL differs between PostgreSQL and SQLite."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite


def insert_if_absent(connection: Connection, table: Table, values: dict[str, Any]) -> bool:
    """Insert the row unless one with its primary key exists (``ON CONFLICT DO NOTHING``, which both dialects
    have); whether this call inserted it. Never an IntegrityError, so a PostgreSQL transaction goes on."""
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).values(**values).on_conflict_do_nothing()
    # A row back says it was inserted: the rowcount of an INSERT that SQLAlchemy gives a RETURNING of its own
    # (PostgreSQL, for the primary key) is not the number of rows inserted.
    return connection.execute(statement.returning(*table.primary_key.columns)).first() is not None
