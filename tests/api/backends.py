"""kts on each backend, for the API tests that describe Kafka's semantics (``cluster`` fixture, tests/api/conftest.py):

- ``zookeeper``: kts writes ZooKeeper as a broker would (the tests' embedded ZooKeeper, a chroot per test);
- ``kraft``: kts speaks the Kafka protocol to the real Kafka 4.x KRaft broker;
- ``zk-broker``: kts speaks the Kafka protocol to the real Kafka 3.9 broker in ZooKeeper mode (owner-carrying token
  RPCs exist from 3.3 on).

The brokers are shared by the whole session: a test isolates itself by users of its own (``user()``), never by
chroots, and filters what it lists by those users. kts logs in to a broker as ``kts``, a broker super user of its own
that no HTTP caller may be (app/auth/own_identity.py); ``admin`` is kts's super user for HTTP callers.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.app import create_app
from app.backends import load_settings
from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.zk.znodes import UserConfigZNode
from tests.conftest import SECRET
from tests.kafka.brokers import RunningBroker

BACKENDS = ("zookeeper", "kraft", "zk-broker")
PROTOCOL_BACKENDS = ("kraft", "zk-broker")


@dataclass
class User:
    name: str
    password: str = field(repr=False)

    @property
    def principal(self) -> str:
        return f"User:{self.name}"

    @property
    def basic(self) -> dict[str, str]:
        raw = f"{self.name}:{self.password}".encode()
        return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


@dataclass
class Cluster:
    """kts on one backend: ``client()`` builds an app over it; ``user()`` makes a user kts and the cluster know."""

    backend: str
    settings: dict[str, Any]
    admin: User
    new_user: Callable[[str], User]
    broker: RunningBroker | None = None
    kts_principal: str | None = None  # who kts is to the cluster (the Kafka protocol only)
    clients: list[TestClient] = field(default_factory=list)

    @property
    def protocol(self) -> bool:
        return self.backend in PROTOCOL_BACKENDS

    def user(self, prefix: str = "user") -> User:
        return self.new_user(prefix)

    def client(self, *, address: tuple[str, int] = ("testclient", 50000), **overrides: Any) -> TestClient:
        """A client of an app built from the backend's settings plus ``overrides``, calling from ``address``."""
        values = {**self.settings, **overrides}
        client = TestClient(create_app(load_settings(**values)), raise_server_exceptions=False, client=address)
        client.__enter__()
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.__exit__(None, None, None)


def kafka_settings(broker: RunningBroker, audit_db_url: str) -> dict[str, Any]:
    """kts on ``broker``: logged in as its own principal (``broker.kts``), ``admin`` its super user for callers."""
    return {
        "bootstrap_servers": broker.bootstrap,
        "admin_security_protocol": "SASL_PLAINTEXT",
        "admin_sasl_mechanism": "SCRAM-SHA-512",
        "admin_sasl_jaas_config": broker.kts_jaas,
        "delegation_token_secret_key": broker.secret,
        "super_users": f"User:{broker.admin.name}",
        "service_id": "test",
        "audit_db_url": audit_db_url,
        "cluster_cache_refresh_ms": 500,
        "admin_request_timeout_ms": 15_000,
    }


def protocol_cluster(
    backend: str, broker: RunningBroker, tmp_path: Path, audit_db_url: str | None = None
) -> Iterator[Cluster]:
    def new_user(prefix: str) -> User:
        made = broker.new_user(prefix)
        return User(made.name, made.password)

    cluster = Cluster(
        backend,
        kafka_settings(broker, audit_db_url or f"sqlite:///{tmp_path / 'audit.db'}"),
        User(broker.admin.name, broker.admin.password),
        new_user,
        broker,
        broker.kts.principal,
    )
    yield cluster
    cluster.close()


def zookeeper_cluster(
    zk_connect: str, raw_zk: KazooClient, tmp_path: Path, audit_db_url: str | None = None
) -> Iterator[Cluster]:
    def new_user(prefix: str) -> User:
        user = User(f"{prefix}-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex)
        put_zk_user(raw_zk, user.name, user.password)
        return user

    admin = User("admin", "admin-secret")
    put_zk_user(raw_zk, admin.name, admin.password)
    cluster = Cluster(
        "zookeeper",
        {
            "zookeeper_connect": zk_connect,
            "delegation_token_secret_key": SECRET,
            "super_users": "User:admin",
            "service_id": "test",
            "audit_db_url": audit_db_url or f"sqlite:///{tmp_path / 'audit.db'}",
        },
        admin,
        new_user,
    )
    yield cluster
    cluster.close()


def put_zk_user(raw_zk: KazooClient, name: str, password: str) -> None:
    config = {
        Mechanism.SCRAM_SHA_512.value: UserConfigZNode.credential_to_string(
            derive(Mechanism.SCRAM_SHA_512, password, 4096)
        )
    }
    raw_zk.ensure_path("/config/users")
    raw_zk.create(UserConfigZNode.path(name), UserConfigZNode.encode(config))
