"""Schema migrations of the audit database (alembic revisions in the top-level ``migrations/``).

``kts serve`` upgrades the schema on start when ``audit.db.auto.migrate=true`` (the default); with
``false`` it refuses to start while the schema is behind, naming the command that upgrades it.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from app.storage.audit.database import translated_db_errors

MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations"


class SchemaBehind(RuntimeError):
    pass


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    with translated_db_errors(), engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


# Replicas starting together on an empty PostgreSQL database take turns: the first migrates, the others
# then find the schema current. (SQLite serializes writers itself.)
_MIGRATION_LOCK_KEY = 0x6B7473  # "kts"


def upgrade(engine: Engine, revision: str = "head") -> None:
    with translated_db_errors(), engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        config = _config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    with translated_db_errors(), engine.begin() as connection:
        config = _config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def ensure_schema(engine: Engine, *, auto_migrate: bool) -> None:
    if auto_migrate:
        upgrade(engine)
        return
    current, head = current_revision(engine), head_revision()
    if current != head:
        raise SchemaBehind(
            f"audit.db.url: the audit schema is at {current or 'nothing'}, kts needs {head}; run "
            "`alembic -c migrations/alembic.ini -x url=<audit.db.url> upgrade head` or set audit.db.auto.migrate=true"
        )
