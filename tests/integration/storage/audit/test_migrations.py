"""The alembic migrations go up and down on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from app.storage.audit import migrations
from app.storage.audit.database import make_engine


def test_up_down_up(any_audit_db: str) -> None:
    engine = make_engine(any_audit_db)
    assert migrations.current_revision(engine) is None
    migrations.upgrade(engine)
    assert migrations.current_revision(engine) == migrations.head_revision()
    columns = {column["name"] for column in inspect(engine).get_columns("audit_events")}
    assert {
        "id",
        "timestamp",
        "action",
        "outcome",
        "principal",
        "owner",
        "token_requester",
        "token_id",
        "error_code",
        "service_id",
        "request_id",
        "client_address",
        "details",
    } == columns
    indexes = {index["name"] for index in inspect(engine).get_indexes("audit_events")}
    assert {"ix_audit_events_timestamp", "ix_audit_events_token_id", "ix_audit_events_principal"} <= indexes
    migrations.downgrade(engine, "base")
    assert "audit_events" not in inspect(engine).get_table_names()
    migrations.upgrade(engine)
    assert migrations.current_revision(engine) == migrations.head_revision()
    engine.dispose()


def test_without_auto_migration_a_behind_schema_refuses_with_the_command(any_audit_db: str) -> None:
    engine = make_engine(any_audit_db)
    with pytest.raises(migrations.SchemaBehind, match="upgrade head"):
        migrations.ensure_schema(engine, auto_migrate=False)
    migrations.ensure_schema(engine, auto_migrate=True)
    migrations.ensure_schema(engine, auto_migrate=False)  # now current: accepted
    engine.dispose()
