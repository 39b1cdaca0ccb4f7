"""Faults between the audit write and the ZooKeeper write end with the two in agreement: no token without
its create event, no create event claiming a token that was never issued unless it is marked failed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.app import create_app
from app.backends import load_settings
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.domain.audit import EventQuery
from app.storage.zk.znodes import KtsZNodes, TokenZNode
from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET, seed_kafka_cluster
from tests.postgres_server import PostgresServer

pytestmark = pytest.mark.only_on("zookeeper", "breaks the ZooKeeper write after the audit write")


class SimulatedCrash(Exception):
    """Stands for the process dying at that point: kts handles only its own errors (KtsError) on the
    audited path, so this one abandons the request exactly where it is raised, leaving what a crash leaves."""


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[EmbeddedZooKeeper]:
    with EmbeddedZooKeeper(tmp_path / "zk") as server:
        seed_kafka_cluster(server.connect_string, "")
        raw = KazooClient(hosts=server.connect_string)
        raw.start(10)
        put_user(raw, *ALICE)
        put_user(raw, *ADMIN)
        raw.stop()
        yield server


@pytest.fixture
def postgres_server(tmp_path: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(tmp_path / "pg")
    server.start()
    yield server
    server.stop(mode="immediate")


def _app(zookeeper: EmbeddedZooKeeper, audit_url: str) -> TestClient:
    settings = load_settings(
        zookeeper_connect=zookeeper.connect_string,
        delegation_token_secret_key=SECRET,
        super_users="User:admin",
        audit_db_url=audit_url,
        zookeeper_session_timeout_ms=4000,
        service_id="replica-1",
    )
    return TestClient(create_app(settings), raise_server_exceptions=False)


def _raw(zookeeper: EmbeddedZooKeeper) -> KazooClient:
    raw = KazooClient(hosts=zookeeper.connect_string)
    raw.start(10)
    return raw


def _agreement(client: TestClient, raw: KazooClient) -> dict[str, Any]:
    """Check the invariant and return the token ids and create outcomes for further assertions."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    creates = runtime.audit_log.query(EventQuery(action="token.create", limit=1000))
    tokens = set(raw.get_children(TokenZNode.ROOT))
    succeeded = {e.token_id for e in creates if e.outcome == "succeeded"}
    assert tokens <= succeeded, "a token exists without a succeeded create event"
    assert succeeded <= tokens, "a create event claims a token that ZooKeeper does not hold"
    assert all(e.outcome != "pending" for e in creates)
    return {"tokens": tokens, "outcomes": sorted(e.outcome for e in creates)}


def test_audit_database_down_refuses_mutations_and_changes_nothing(
    zookeeper: EmbeddedZooKeeper, postgres_server: PostgresServer
) -> None:
    url = postgres_server.create_database()
    with _app(zookeeper, url) as client:
        assert client.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
        postgres_server.stop(mode="immediate")
        raw = _raw(zookeeper)
        before = sorted(raw.get_children(TokenZNode.ROOT))
        response = client.post("/v1/tokens", json={}, headers=basic(ALICE))
        assert response.status_code == 503
        assert response.headers["retry-after"]
        acl = {
            "resourceType": "User",
            "resourceName": "User:joe",
            "principal": "User:x",
            "operation": "CreateTokens",
            "permissionType": "Allow",
        }
        assert client.post("/v1/acls", json=acl, headers=basic(ADMIN)).status_code == 503
        assert raw.exists("/kafka-acl/User/User:joe") is None
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["reason"] == "audit_database"
        assert client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200  # reads go on
        assert sorted(raw.get_children(TokenZNode.ROOT)) == before
        postgres_server.start()
        assert client.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
        result = _agreement(client, raw)
        assert len(result["tokens"]) == 2
        raw.stop()


def test_zookeeper_failing_after_the_audit_write(zookeeper: EmbeddedZooKeeper, tmp_path: Path) -> None:
    with _app(zookeeper, f"sqlite:///{tmp_path / 'audit.db'}") as client:
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        store = runtime.tokens._store
        real_create = store.create

        def zookeeper_dies_first(*args: Any, **kwargs: Any) -> Any:
            zookeeper.kill()
            return real_create(*args, **kwargs)

        store.create = zookeeper_dies_first
        response = client.post("/v1/tokens", json={}, headers=basic(ALICE))
        assert response.status_code == 503
        store.create = real_create
        unknown = runtime.audit_log.query(EventQuery(action="token.create"))[0]
        assert unknown.outcome == "pending"  # the write's fate is unknown until ZooKeeper can be asked
        zookeeper.start()
        eventually(lambda: runtime.cluster_connected(), timeout_s=15)
        runtime.reconciler.reconcile(at_start=True)  # what the periodic pass does once the grace has passed
        raw = _raw(zookeeper)
        assert raw.get_children(TokenZNode.ROOT) == []
        assert _agreement(client, raw)["outcomes"] == ["failed"]
        raw.stop()


@pytest.mark.parametrize("crash", ["after_zookeeper_write", "before_zookeeper_write"])
def test_process_dies_between_the_two_writes_then_restarts(
    zookeeper: EmbeddedZooKeeper, tmp_path: Path, crash: str
) -> None:
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    first = _app(zookeeper, url)
    first.__enter__()
    runtime = first.app.state.runtime  # type: ignore[attr-defined]
    if crash == "after_zookeeper_write":

        def die(*_: Any) -> bool:
            raise SimulatedCrash

        runtime.audit_log.complete = die
    else:
        store = runtime.tokens._store

        def die_before(*_: Any, **__: Any) -> Any:
            raise SimulatedCrash

        store.create = die_before
    assert first.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 500
    pending = runtime.audit_log.query(EventQuery(action="token.create"))
    assert [e.outcome for e in pending] == ["pending"]
    raw = _raw(zookeeper)
    assert bool(raw.get_children(TokenZNode.ROOT)) is (crash == "after_zookeeper_write")
    first.__exit__(None, None, None)  # the dead process's sessions go away

    with _app(zookeeper, url) as restarted:  # start-up reconciliation settles the pending event
        result = _agreement(restarted, raw)
        expected = "succeeded" if crash == "after_zookeeper_write" else "failed"
        assert result["outcomes"] == [expected]
        assert raw.get_children(KtsZNodes.AUDIT_INTENTS) == []
        event = restarted.app.state.runtime.audit_log.query(EventQuery(action="token.create"))[0]  # type: ignore[attr-defined]
        assert event.details.get("reconciled") is True
    raw.stop()
