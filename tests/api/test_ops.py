"""Liveness, readiness, and the 503 answer when ZooKeeper goes away."""

from __future__ import annotations

import platform
import time
from importlib.metadata import version
from pathlib import Path

from fastapi.testclient import TestClient

from app.api.app import create_app
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.settings import load_settings
from app.version import DISTRIBUTION
from tests.api.conftest import ALICE, basic, put_user
from tests.conftest import SECRET, seed_kafka_cluster


def test_healthz_and_readyz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "version": version(DISTRIBUTION)}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["cluster"] == "ok" and ready.json()["backend"] == "zookeeper"


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
            assert "zookeeper" in ready.json()["message"]
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
