"""Schema migrations of the audit database (alembic revisions in the top-level ``migrations/``).

``kts serve`` upgrades the schema on start when ``audit.db.auto.migrate=true`` (the default); with
``false`` it refuses to start while the schema is behind, naming the command that upgrades it.

alembic itself (with mako and pygments, some 0.4 s of imports) is loaded only when there is something to do:
a schema already at ``HEAD_REVISION``, what almost every start finds, is recognised by reading alembic's version
table with one plain query. ``HEAD_REVISION`` is the newest revision under ``migrations/versions``, written out
here; tests/integration/storage/audit/test_migrations.py fails should a new revision be added without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect, text

from app.storage.audit.database import translated_db_errors

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations"
# The head of migrations/versions (what ``alembic heads`` prints), so that start-up need not load alembic to know it.
HEAD_REVISION = "0003"
# Where alembic keeps the revision a database is at (its default; migrations/env.py does not change it).
VERSION_TABLE = "alembic_version"


class SchemaBehind(RuntimeError):
    pass


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    """The head as alembic finds it in ``migrations/versions`` (the image build checks it finds one)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, as alembic records it; None for a database it never migrated."""
    from alembic.runtime.migration import MigrationContext

    with translated_db_errors(), engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def at_head(engine: Engine) -> bool:
    """Whether the database is at ``HEAD_REVISION``, read without alembic: its version table holds that one
    revision. Anything else (no table, no row, other or several revisions) is left to alembic to judge."""
    with translated_db_errors(), engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return False
        revisions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return revisions == [HEAD_REVISION]


# Replicas starting together on an empty PostgreSQL database take turns: the first migrates, the others
# then find the schema current. (SQLite serializes writers itself.)
_MIGRATION_LOCK_KEY = 0x6B7473  # "kts"


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    with translated_db_errors(), engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        config = _config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    with translated_db_errors(), engine.begin() as connection:
        config = _config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def ensure_schema(engine: Engine, *, auto_migrate: bool) -> None:
    if at_head(engine):
        return
    if auto_migrate:
        upgrade(engine)
        return
    current, head = current_revision(engine), head_revision()
    if current != head:
        raise SchemaBehind(
            f"audit.db.url: the audit schema is at {current or 'nothing'}, kts needs {head}; run "
            "`alembic -c migrations/alembic.ini -x url=<audit.db.url> upgrade head` or set audit.db.auto.migrate=true"
        )
