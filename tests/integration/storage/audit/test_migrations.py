"""The alembic migrations go up and down on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Connection, inspect, text

from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[4]


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
        "job_framework",
        "job_id",
        "job_name",
        "job_user",
    } == columns
    indexes = {index["name"] for index in inspect(engine).get_indexes("audit_events")}
    assert {"ix_audit_events_timestamp", "ix_audit_events_token_id", "ix_audit_events_principal"} <= indexes
    assert {"ix_audit_events_job_framework", "ix_audit_events_job_id", "ix_audit_events_job_user"} <= indexes
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


def test_replicas_migrating_an_empty_postgresql_database_at_once_all_succeed(postgres: PostgresServer) -> None:
    """Three replicas of a Deployment start together on a fresh database: each process migrates or finds
    the schema current; none fails. (Separate processes, as replicas are: alembic's context is global.)"""
    url = postgres.create_database()
    script = (
        "import sys, time\n"
        "from app.storage.audit import migrations\n"
        "from app.storage.audit.database import make_engine\n"
        "engine = make_engine(sys.argv[1])\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "migrations.upgrade(engine)\n"
    )
    start_at = str(time.time() + 3)  # after every process has imported: they migrate at the same instant
    replicas = [
        subprocess.Popen([sys.executable, "-c", script, url, start_at], cwd=ROOT, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    failures = [replica.stderr.read().decode() for replica in replicas if replica.wait(120) != 0]  # type: ignore[union-attr]
    assert failures == []
    engine = make_engine(url)
    assert migrations.current_revision(engine) == migrations.head_revision()
    engine.dispose()


def test_the_head_revision_written_out_is_alembics_one_head() -> None:
    """Start-up compares the database with HEAD_REVISION without loading alembic: a revision added under
    migrations/versions without moving HEAD_REVISION would otherwise be skipped by every replica."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(migrations.MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_heads() == [migrations.HEAD_REVISION]
    assert migrations.head_revision() == migrations.HEAD_REVISION


def test_only_one_row_naming_the_head_is_at_head(any_audit_db: str) -> None:
    engine = make_engine(any_audit_db)
    assert not migrations.at_head(engine)  # no version table
    migrations.upgrade(engine, "0001")
    assert not migrations.at_head(engine)
    with pytest.raises(migrations.SchemaBehind, match="at 0001, kts needs 0003"):
        migrations.ensure_schema(engine, auto_migrate=False)
    migrations.ensure_schema(engine, auto_migrate=True)
    assert migrations.at_head(engine)
    with engine.begin() as connection:  # what alembic would call several heads: not this check's to judge
        connection.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0001')"))
    assert not migrations.at_head(engine)
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM alembic_version"))
    assert not migrations.at_head(engine)
    engine.dispose()


def test_a_schema_at_head_is_accepted_without_loading_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    engine = make_engine(url)
    migrations.upgrade(engine)
    engine.dispose()
    script = (
        "import sys\n"
        "from app.storage.audit import migrations\n"
        "from app.storage.audit.database import make_engine\n"
        "migrations.ensure_schema(make_engine(sys.argv[1]), auto_migrate=sys.argv[2] == 'true')\n"
        "print(sorted({name.partition('.')[0] for name in sys.modules} & {'alembic', 'mako', 'pygments'}))\n"
    )
    for auto in ("true", "false"):
        done = subprocess.run([sys.executable, "-c", script, url, auto], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]"


def test_0003_adds_the_job_columns_to_a_trail_that_has_events(any_audit_db: str) -> None:
    """Events written before 0003 keep their rows, with no job; the job filters use the partial indexes; a
    downgrade to 0002 takes the columns away and keeps the events."""
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine, "0002")
    insert = text(
        "INSERT INTO audit_events (timestamp, action, outcome, token_id, service_id, details) "
        "VALUES (:at, 'token.create', 'succeeded', :token, 'kts-0', '{}')"
    )
    with engine.begin() as connection:
        connection.execute(insert, {"at": 1, "token": "before"})
    migrations.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO audit_events (timestamp, action, outcome, token_id, service_id, details, job_framework, "
                "job_id) VALUES (2, 'token.create', 'succeeded', 'after', 'kts-0', '{}', 'spark', 'app-1')"
            )
        )
        rows = connection.execute(text("SELECT token_id, job_framework, job_id FROM audit_events ORDER BY id")).all()
        plan = _plan(connection, "SELECT id FROM audit_events WHERE job_id = 'app-1'")
    assert [tuple(row) for row in rows] == [("before", None, None), ("after", "spark", "app-1")]
    assert "ix_audit_events_job_id" in plan
    migrations.downgrade(engine, "0002")
    columns = {column["name"] for column in inspect(engine).get_columns("audit_events")}
    indexes = {index["name"] for index in inspect(engine).get_indexes("audit_events")}
    assert not {name for name in columns | indexes if "job" in name}
    with engine.connect() as connection:
        assert connection.execute(text("SELECT token_id FROM audit_events ORDER BY id")).scalars().all() == [
            "before",
            "after",
        ]
    engine.dispose()


def _plan(connection: Connection, query: str) -> str:
    """The plan the database would run ``query`` with (PostgreSQL told to prefer an index on a tiny table)."""
    if connection.dialect.name == "sqlite":
        return " ".join(str(row[-1]) for row in connection.execute(text(f"EXPLAIN QUERY PLAN {query}")))
    connection.execute(text("SET LOCAL enable_seqscan = off"))
    return " ".join(str(row[0]) for row in connection.execute(text(f"EXPLAIN {query}")))
