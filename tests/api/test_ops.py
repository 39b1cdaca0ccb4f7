"""Liveness, readiness (a status and a reason word for anyone; the details for callers with Describe on the cluster),
and the 503 answer when ZooKeeper goes away."""

from __future__ import annotations

import platform
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.backends import load_settings
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.version import DISTRIBUTION
from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.conftest import CLUSTER_ID, SECRET, seed_kafka_cluster

pytestmark = pytest.mark.only_on("zookeeper", "stops ZooKeeper to see /readyz and the 503 answer")


def test_healthz_and_readyz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "version": version(DISTRIBUTION)}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "reason": "ok"}


def test_readyz_tells_a_stranger_nothing_of_the_cluster_and_the_status_endpoint_tells_operators(
    client: TestClient,
) -> None:
    """The attack: /readyz needs no login, and used to tell anyone who reached it the cluster's id, its controller,
    the migration's offsets and how kts reaches the cluster."""
    stranger = client.get("/readyz")
    assert set(stranger.json()) == {"status", "reason"}
    for detail in (CLUSTER_ID, "clusterId", "controller", "kraftMetadataOffset", "zookeeper", "backend", "checks"):
        assert detail not in stranger.text

    assert client.get("/v1/cluster/status").status_code == 401
    refused = client.get("/v1/cluster/status", headers=basic(ALICE))  # no Describe on the cluster
    assert (refused.status_code, refused.json()["code"]) == (403, 31), refused.text
    assert "needs Describe on Cluster:kafka-cluster" in refused.json()["message"]
    status = client.get("/v1/cluster/status", headers=basic(ADMIN))
    assert status.status_code == 200, status.text
    body = status.json()
    assert (body["status"], body["reason"], body["backend"]) == ("ready", "ok", "zookeeper")
    assert body["checks"] == {"cluster": "ok", "tokens": "ok", "acls": "ok", "audit_database": "ok"}
    assert body["migration"]["clusterId"] == CLUSTER_ID and body["migration"]["phase"] == "zookeeper"
    grant = {
        "resourceType": "Cluster",
        "resourceName": "kafka-cluster",
        "patternType": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "Describe",
        "permissionType": "Allow",
    }
    assert client.post("/v1/acls", json=grant, headers=basic(ADMIN)).status_code == 201
    assert client.get("/v1/cluster/status", headers=basic(ALICE)).json() == body


def test_zookeeper_outage_answers_503_with_retry_after(tmp_path: Path) -> None:
    from kazoo.client import KazooClient

    with EmbeddedZooKeeper(tmp_path / "zk") as zookeeper:
        seed_kafka_cluster(zookeeper.connect_string, "")
        raw = KazooClient(hosts=zookeeper.connect_string)
        raw.start(10)
        put_user(raw, "alice", "alice-pw")
        raw.stop()
        settings = load_settings(
            zookeeper_connect=zookeeper.connect_string,
            delegation_token_secret_key=SECRET,
            zookeeper_session_timeout_ms=4000,
            audit_db_url=f"sqlite:///{tmp_path / 'audit.db'}",
        )
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            assert client.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
            zookeeper.kill()
            deadline = time.monotonic() + 10
            while client.get("/readyz").status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.headers["retry-after"]
            assert ready.json() == {
                "error": "NOT_READY",
                "message": "Not ready: cluster.",
                "status": "not-ready",
                "reason": "cluster",
            }
            response = client.post("/v1/tokens", json={}, headers=basic(ALICE))
            assert response.status_code == 503
            assert response.headers["retry-after"]
            assert response.json()["error"] == "SERVICE_UNAVAILABLE"
            assert client.get("/healthz").status_code == 200


def test_build_info_names_the_version_and_python(client: TestClient) -> None:
    text = client.get("/metrics").text
    line = f'kts_build_info{{python_version="{platform.python_version()}",version="{version(DISTRIBUTION)}"}} 1.0'
    assert line in text.splitlines()
    assert "# TYPE kts_build_info gauge" in text
