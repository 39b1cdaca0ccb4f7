"""The real app over httpx (Starlette's TestClient runs the lifespan) on a real ZooKeeper."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.app import create_app
from app.backends import load_settings
from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.zk.znodes import UserConfigZNode
from tests.api.backends import BACKENDS, Cluster, protocol_cluster, zookeeper_cluster
from tests.conftest import SECRET

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-pw")
BOB = ("bob", "bob-pw")
CAROL = ("carol", "carol-pw")


def basic(user: tuple[str, str]) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()}


def bearer(token: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token['tokenId']}:{token['hmac']}"}


def put_user(raw_zk: KazooClient, name: str, password: str, mechanism: Mechanism = Mechanism.SCRAM_SHA_512) -> None:
    """Write a credential exactly as kafka-configs.sh would, bypassing kts."""
    config = {mechanism.value: UserConfigZNode.credential_to_string(derive(mechanism, password, 4096))}
    raw_zk.ensure_path("/config/users")
    raw_zk.create(UserConfigZNode.path(name), UserConfigZNode.encode(config))


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {}


@pytest.fixture
def audit_db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'audit.db'}"


@pytest.fixture
def make_client(zk_connect: str, raw_zk: KazooClient, audit_db_url: str) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(*, address: tuple[str, int] = ("testclient", 50000), **overrides: Any) -> TestClient:
        """A client of an app built from the test settings plus ``overrides``, calling from ``address``."""
        values: dict[str, Any] = {
            "zookeeper_connect": zk_connect,
            "delegation_token_secret_key": SECRET,
            "super_users": "User:admin",
            "service_id": "test",
            "audit_db_url": audit_db_url,
        }
        values.update(overrides)
        client = TestClient(create_app(load_settings(**values)), raise_server_exceptions=False, client=address)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(
    make_client: Callable[..., TestClient], raw_zk: KazooClient, settings_overrides: dict[str, Any]
) -> TestClient:
    for name, password in (ADMIN, ALICE, BOB, CAROL):
        put_user(raw_zk, name, password)
    return make_client(**settings_overrides)


@pytest.fixture(params=BACKENDS)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """kts on each backend (tests/api/backends.py): ZooKeeper, and the Kafka protocol on the real KRaft broker
    and on the real ZooKeeper-mode broker."""
    if request.param == "zookeeper":
        yield from zookeeper_cluster(request.getfixturevalue("zk_connect"), request.getfixturevalue("raw_zk"), tmp_path)
    elif request.param == "kraft":
        yield from protocol_cluster("kraft", request.getfixturevalue("kafka_kraft_broker"), tmp_path)
    else:
        yield from protocol_cluster("zk-broker", request.getfixturevalue("kafka_zk_broker"), tmp_path)
