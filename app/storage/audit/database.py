"""The audit database engine, and the one place where SQLAlchemy errors become domain errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.domain.errors import StoreUnavailable

CONNECT_TIMEOUT_S = 5


def make_engine(url: str) -> Engine:
    """An engine for ``audit.db.url``: SQLite (WAL, waits on locks) or PostgreSQL (psycopg 3)."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    options: dict[str, Any] = {}
    if url.startswith("sqlite"):
        # A file has no connection to lose: no ping before each use (it cost a statement per group commit).
        options["connect_args"] = {"check_same_thread": False, "timeout": CONNECT_TIMEOUT_S}
    elif url.startswith("postgresql"):
        options |= {
            "pool_pre_ping": True,
            "pool_size": 10,
            "max_overflow": 10,
            "pool_timeout": CONNECT_TIMEOUT_S,
            "connect_args": {"connect_timeout": CONNECT_TIMEOUT_S},
        }
    engine = create_engine(url, **options)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    elif engine.dialect.name == "postgresql":
        from app.storage.audit.tables import add_postgresql_options  # here: not imported for SQLite engines

        add_postgresql_options()
    return engine


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
    cursor.execute("PRAGMA synchronous=FULL")  # an acknowledged audit row survives a power cut
    cursor.execute(f"PRAGMA busy_timeout={CONNECT_TIMEOUT_S * 1000}")
    cursor.close()


@contextmanager
def translated_db_errors() -> Iterator[None]:
    try:
        yield
    except (OperationalError, PoolTimeout) as exc:
        raise StoreUnavailable("The audit database is not reachable right now; retry shortly.") from exc
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise StoreUnavailable("The audit database connection was lost; retry shortly.") from exc
        raise


def describe_url(url: str) -> str:
    """The URL without its password, for logs and error messages."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
