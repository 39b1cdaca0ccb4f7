"""Audit-database engines for tests that play several replicas (one engine each: replicas share no pool): the
``engines`` fixture (made available by the conftest files that import it) and ``migrated``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

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
