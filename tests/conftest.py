"""Fixtures shared by every test: a real ZooKeeper server (one per session, a fresh chroot per test)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.embedded_zookeeper import EmbeddedZooKeeper
from tests.postgres_server import PostgresServer

SECRET = "test12345"


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings must come from the test, never from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("KTS_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    server = EmbeddedZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def zk_connect(zookeeper: EmbeddedZooKeeper) -> str:
    """A connect string with a chroot of its own, so every test starts from empty ZooKeeper state."""
    return f"{zookeeper.connect_string}/kts-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def raw_zk(zk_connect: str) -> Iterator[KazooClient]:
    """A plain kazoo client on the test's chroot, to put and inspect znodes as a broker would."""
    hosts, _, chroot = zk_connect.partition("/")
    bootstrap = KazooClient(hosts=hosts)
    bootstrap.start(10)
    bootstrap.ensure_path("/" + chroot)
    bootstrap.stop()
    bootstrap.close()
    client = KazooClient(hosts=zk_connect)
    client.start(10)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    server = PostgresServer(tmp_path_factory.mktemp("postgres"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_audit_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty audit database URL, once for SQLite and once for a real PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'audit.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


def write_properties(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8")
    return path
