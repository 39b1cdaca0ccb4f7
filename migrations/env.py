"""Alembic environment for the audit database. kts runs it programmatically (``kts serve`` migrates on
start); ``alembic -c migrations/alembic.ini`` works too, with ``-x url=...`` naming the database."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.storage.audit.database import make_engine
from app.storage.sql.tables import metadata  # every table: the audit trail's and the replicas' (0002)

config = context.config


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the audit database URL: alembic -c migrations/alembic.ini -x url=... upgrade head")
    with make_engine(url).connect() as fresh:
        _run(fresh)
