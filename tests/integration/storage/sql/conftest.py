"""Databases for the replicas' coordination tables: migrated to head, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import pytest

from tests.engines import engines, migrated
from tests.postgres_server import PostgresServer

__all__ = ["engines"]  # the fixture


@pytest.fixture
def coordination_db(any_audit_db: str) -> str:
    """An audit database at head, SQLite or PostgreSQL."""
    return migrated(any_audit_db)


@pytest.fixture
def postgres_db(postgres: PostgresServer) -> str:
    """A PostgreSQL audit database at head: several replicas share only PostgreSQL."""
    return migrated(postgres.create_database())
