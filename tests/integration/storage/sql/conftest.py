"""Databases for the replicas' coordination tables: migrated to head, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine

from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from tests.postgres_server import PostgresServer


@pytest.fixture
def engines() -> Iterator[Callable[[str], Engine]]:
    """Engines made by a test (one per replica: replicas share no pool), disposed of at its end."""
    made: list[Engine] = []

    def make(url: str) -> Engine:
        engine = make_engine(url)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.dispose()


@pytest.fixture
def coordination_db(any_audit_db: str) -> str:
    """An audit database at head, SQLite or PostgreSQL."""
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    engine.dispose()
    return any_audit_db


@pytest.fixture
def postgres_db(postgres: PostgresServer) -> str:
    """A PostgreSQL audit database at head: several replicas share only PostgreSQL."""
    url = postgres.create_database()
    engine = make_engine(url)
    migrations.upgrade(engine)
    engine.dispose()
    return url
