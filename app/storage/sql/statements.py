"""Statements whose SQL differs between PostgreSQL and SQLite."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table


def insert_if_absent(connection: Connection, table: Table, values: dict[str, Any]) -> bool:
    """Insert the row unless one with its primary key exists (``ON CONFLICT DO NOTHING``, which both dialects
    have); whether this call inserted it. Never an IntegrityError, so a PostgreSQL transaction goes on."""
    statement = _insert(connection, table).values(**values).on_conflict_do_nothing()
    # A row back says it was inserted: the rowcount of an INSERT that SQLAlchemy gives a RETURNING of its own
    # (PostgreSQL, for the primary key) is not the number of rows inserted.
    return connection.execute(statement.returning(*table.primary_key.columns)).first() is not None


def _insert(connection: Connection, table: Table) -> Any:
    """The dialect's INSERT, its package imported here, when a statement is made: importing PostgreSQL's at start-up
    was some 18 ms that a replica on SQLite spends for nothing (a module imported already costs a dict lookup)."""
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)
