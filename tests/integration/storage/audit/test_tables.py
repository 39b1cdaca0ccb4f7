"""The audit table derived from ``EVENT_FIELDS``, and the replicas' tables (app/storage/sql/tables.py), are
exactly what the alembic revisions create, on SQLite and on a real PostgreSQL server (alembic's own
autogenerate comparison: columns, types, nullability, indexes)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from app.domain.audit import EVENT_FIELDS
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.tables import audit_events
from app.storage.sql.tables import metadata


def test_the_derived_table_equals_what_the_migrations_create(any_audit_db: str) -> None:
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), metadata)
        columns = inspect(connection).get_columns(audit_events.name)
    engine.dispose()

    assert differences == []
    assert [column["name"] for column in columns] == [field.name for field in EVENT_FIELDS]
    assert [column["nullable"] for column in columns][1:] == [field.nullable for field in EVENT_FIELDS][1:]
