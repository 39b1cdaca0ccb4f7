"""Fixtures of the contract suites: each port of app/service/ports.py (and the leadership and intent-store ports)
is given by a harness per implementation, parametrized, so one case runs against every backend's store. A
harness makes "replicas": stores of the same backend that share what replicas share (their own ZooKeeper
session or database engine each; in memory, one process holds them all)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine

from app.storage.audit import migrations
from app.storage.audit.database import make_engine


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


def migrated(url: str) -> str:
    """``url``'s audit database at head."""
    engine = make_engine(url)
    migrations.upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture
def kraft_clusters(request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """``make()``: a connection of kts's own to the real KRaft broker (``kafka_kraft_broker``), as a replica has
    one; closed at the test's end. The broker is the session's: a test names users and resources of its own."""
    from app.domain.token_secret import TokenSecret
    from app.settings import load_settings
    from app.storage.kafka.cluster import KafkaCluster
    from tests.api.backends import kafka_settings

    broker = request.getfixturevalue("kafka_kraft_broker")
    settings = load_settings(**kafka_settings(broker, "sqlite://"))
    started: list[Any] = []

    def make() -> Any:
        cluster = KafkaCluster(broker.bootstrap, settings.kafka_security, request_timeout_ms=15_000)
        cluster.start(TokenSecret(broker.secret))
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()
