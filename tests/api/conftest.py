"""The real app over httpx (Starlette's TestClient runs the lifespan), on each backend.

Three kinds of API test, by the fixture they take (tests/api/backends.py has the backends):

- ``client``/``make_client`` (and ``kts``, ``alice``, ``bob``, ``carol``): Kafka's token, ACL and user semantics, run
  once per backend in ``API_BACKENDS``: ZooKeeper (a chroot per test) and the Kafka protocol against the real KRaft
  broker (one per session, shared: a test isolates itself by the users of its own that ``alice``/``bob``/``carol``
  make). A test or module of one backend says which and why in one line:
  ``pytestmark = pytest.mark.only_on("zookeeper", "asserts the token znodes")``; a test that takes ``raw_zk`` or
  ``zk_connect`` next to ``client`` must say so (collection fails otherwise). Where the backends differ and the
  lead has to decide which is right, ``xfail_on(backend, reason)`` expects the failure there (strictly; with
  ``strict=False`` where the failure is a race that a run may not hit).
- ``edge_client``: the HTTP edge only (validation 422s, body limits, security headers, the error envelope), on
  ``EDGE_BACKEND`` (``memory``: app/storage/memory/, no server; ``zookeeper`` too), with the fixed users
  ``ADMIN``, ``ALICE``, ``BOB``, ``CAROL``.
- ``cluster``: every backend, the ZooKeeper-mode broker's Kafka protocol included (tests/api/test_backends.py).
"""

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
from tests.api.backends import BACKENDS, Cluster, User, protocol_cluster, zookeeper_cluster
from tests.conftest import SECRET
from tests.memory_backend import add_user, memory_client

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-pw")
BOB = ("bob", "bob-pw")
CAROL = ("carol", "carol-pw")
FIXED_USERS = (ADMIN, ALICE, BOB, CAROL)

# The backends a ``client`` test runs on, and the one ``edge_client`` tests run on.
API_BACKENDS = ("zookeeper", "kraft")
EDGE_BACKEND = "memory"
# What a test that takes one of these fixtures directly reads or writes is ZooKeeper's own.
ZOOKEEPER_FIXTURES = ("raw_zk", "zk_connect")


def basic(user: tuple[str, str] | User) -> dict[str, str]:
    if isinstance(user, User):
        return user.basic
    return {"Authorization": "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()}


def bearer(token: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token['tokenId']}:{token['hmac']}"}


def put_user(raw_zk: KazooClient, name: str, password: str, mechanism: Mechanism = Mechanism.SCRAM_SHA_512) -> None:
    """Write a credential exactly as kafka-configs.sh would, bypassing kts (over a user the backend's fixture made
    already, ``admin``, too)."""
    config = {mechanism.value: UserConfigZNode.credential_to_string(derive(mechanism, password, 4096))}
    raw_zk.ensure_path("/config/users")
    if raw_zk.exists(UserConfigZNode.path(name)):
        raw_zk.set(UserConfigZNode.path(name), UserConfigZNode.encode(config))
    else:
        raw_zk.create(UserConfigZNode.path(name), UserConfigZNode.encode(config))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test on ``kts`` runs once per backend of ``API_BACKENDS``, or on the one its ``only_on`` mark names."""
    if "backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("only_on")
    if marker is None:
        direct = sorted(set(ZOOKEEPER_FIXTURES) & set(metafunc.fixturenames))
        if direct:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid} takes {', '.join(direct)}: mark it "
                '@pytest.mark.only_on("zookeeper", "<why, in one line>") or leave ZooKeeper out of it'
            )
        backends: tuple[str, ...] = API_BACKENDS
    else:
        if len(marker.args) != 2 or marker.args[0] not in API_BACKENDS or not marker.args[1]:
            raise pytest.UsageError(f'{metafunc.definition.nodeid}: only_on("<{"|".join(API_BACKENDS)}>", "<why>")')
        backends = (marker.args[0],)
    differs = {mark.args[0]: mark for mark in metafunc.definition.iter_markers("xfail_on")}
    params = [
        pytest.param(
            name,
            marks=pytest.mark.xfail(strict=differs[name].kwargs.get("strict", True), reason=differs[name].args[1]),
        )
        if name in differs
        else name
        for name in backends
    ]
    metafunc.parametrize("backend", params, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {}


@pytest.fixture
def audit_db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'audit.db'}"


@pytest.fixture
def kts(backend: str, request: pytest.FixtureRequest, tmp_path: Path, audit_db_url: str) -> Iterator[Cluster]:
    """kts on ``backend``, its audit trail in ``audit_db_url``; its ``admin`` is kts's super user for HTTP callers
    (``User:admin`` on both)."""
    if backend == "zookeeper":
        zk_connect, raw_zk = request.getfixturevalue("zk_connect"), request.getfixturevalue("raw_zk")
        yield from zookeeper_cluster(zk_connect, raw_zk, tmp_path, audit_db_url)
    else:
        yield from protocol_cluster(backend, request.getfixturevalue("kafka_kraft_broker"), tmp_path, audit_db_url)


@pytest.fixture
def admin(kts: Cluster) -> User:
    return kts.admin


@pytest.fixture
def alice(kts: Cluster) -> User:
    return kts.user("alice")


@pytest.fixture
def bob(kts: Cluster) -> User:
    return kts.user("bob")


@pytest.fixture
def carol(kts: Cluster) -> User:
    return kts.user("carol")


@pytest.fixture
def make_client(kts: Cluster) -> Callable[..., TestClient]:
    """Clients of apps built from the test's backend settings plus ``overrides``, calling from ``address``."""
    return kts.client


@pytest.fixture
def client(
    kts: Cluster,
    make_client: Callable[..., TestClient],
    settings_overrides: dict[str, Any],
    request: pytest.FixtureRequest,
) -> TestClient:
    """A client of the test's backend; on ZooKeeper the fixed users ``ALICE``, ``BOB``, ``CAROL`` exist too (the
    tests of ZooKeeper alone log in as them)."""
    if kts.backend == "zookeeper":
        raw_zk = request.getfixturevalue("raw_zk")
        for name, password in (ALICE, BOB, CAROL):
            put_user(raw_zk, name, password)
    return make_client(**settings_overrides)


def _memory_edge(request: pytest.FixtureRequest, values: dict[str, Any]) -> Iterator[TestClient]:
    """The app over a fresh ``MemoryBackend`` (tests/memory_backend.py): no server to start or to share."""
    with memory_client({**values, "zookeeper_connect": "127.0.0.1:1/unused"}) as (client, backend):
        for name, password in FIXED_USERS:
            add_user(backend, name, password)
        yield client


def _zookeeper_edge(request: pytest.FixtureRequest, values: dict[str, Any]) -> Iterator[TestClient]:
    """The app on the tests' ZooKeeper, a chroot of the test's own."""
    raw_zk = request.getfixturevalue("raw_zk")
    for name, password in FIXED_USERS:
        put_user(raw_zk, name, password)
    values = {**values, "zookeeper_connect": request.getfixturevalue("zk_connect")}
    with TestClient(create_app(load_settings(**values)), raise_server_exceptions=False) as client:
        yield client


EDGE_APPS = {"memory": _memory_edge, "zookeeper": _zookeeper_edge}


@pytest.fixture
def edge_client(
    request: pytest.FixtureRequest, audit_db_url: str, settings_overrides: dict[str, Any]
) -> Iterator[TestClient]:
    """An app on ``EDGE_BACKEND`` with the fixed users ``ADMIN``, ``ALICE``, ``BOB``, ``CAROL``, for the tests
    of the HTTP edge, which no backend changes."""
    values: dict[str, Any] = {
        "delegation_token_secret_key": SECRET,
        "super_users": "User:admin",
        "service_id": "test",
        "audit_db_url": audit_db_url,
        **settings_overrides,
    }
    yield from EDGE_APPS[EDGE_BACKEND](request, values)


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
