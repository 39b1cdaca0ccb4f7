"""Audit-database engines for tests that play several replicas (one engine each: replicas share no pool): the
``engines`` fixture (made available by the conftest files that import it) and ``migrated``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from app.storage.audit import migrations
from app.storage.audit.database import make_engine


@pytest.fixture
def engines() -> Iterator[Callable[[str], Engine]]:
    """Engines made by a test, disposed of at its end."""
    made: list[Engine] = []

    def make(url: str) -> Engine:
        engine = make_engine(url)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.dispose()


def migrated(url: str) -> str:
    """``url``'s audit database at head."""
    engine = make_engine(url)
    migrations.upgrade(engine)
    engine.dispose()
    return url


def migrated_database(request: pytest.FixtureRequest, tmp_path: Path, kind: str) -> str:
    """A fresh audit database at head, ``sqlite`` (a file of the test's own) or ``postgresql`` (a database of the
    session's server): where the stores that share the audit database keep what replicas share."""
    if kind == "sqlite":
        return migrated(f"sqlite:///{tmp_path / 'audit.db'}")
    assert kind == "postgresql", kind
    return migrated(request.getfixturevalue("postgres").create_database())
