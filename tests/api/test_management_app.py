"""The management listener's app on the real app's state and a real ZooKeeper: before the main app's lifespan has
built the runtime it answers /healthz and says /readyz is not ready (never a 500); afterwards it reports the same
replica as the main app; it serves nothing but its three paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.app import create_app
from app.api.management import create_management_app
from app.backends import load_settings
from tests.api.conftest import ALICE, basic, put_user
from tests.conftest import SECRET

pytestmark = pytest.mark.only_on("zookeeper", "asserts the replica's state on ZooKeeper before and after its lifespan")


def test_the_management_app_reports_the_main_app_s_replica(
    zk_connect: str, raw_zk: KazooClient, tmp_path: Path
) -> None:
    put_user(raw_zk, *ALICE)
    settings = load_settings(
        zookeeper_connect=zk_connect,
        delegation_token_secret_key=SECRET,
        audit_db_url=f"sqlite:///{tmp_path / 'audit.db'}",
    )
    main = create_app(settings)
    management = TestClient(create_management_app(main), raise_server_exceptions=False)

    assert management.get("/healthz").json()["status"] == "ok"
    starting = management.get("/readyz")
    assert starting.status_code == 503
    assert starting.json()["error"] == "NOT_READY"
    assert (starting.json()["status"], starting.json()["reason"]) == ("not-ready", "runtime")
    assert "Retry-After" in starting.headers
    scrape = management.get("/metrics")
    assert scrape.status_code == 503 and scrape.json()["error"] == "SERVICE_UNAVAILABLE"

    with TestClient(main) as api:
        assert api.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
        ready = management.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json() == api.get("/readyz").json()
        scraped = management.get("/metrics").text
        assert 'kts_http_requests_total{method="POST",route="/v1/tokens",status="201"} 1.0' in scraped
        # the main listener's /readyz is counted, the management listener's probes and scrapes are not
        assert 'kts_http_requests_total{method="GET",route="/readyz",status="200"} 1.0' in scraped
        assert 'route="/metrics"' not in scraped
        assert ready.json() == {"status": "ready", "reason": "ok"}  # no detail of the cluster, here either
        for path in ("/v1/tokens", "/docs", "/openapi.json", "/v1/audit", "/v1/cluster/status"):
            missing = management.get(path, headers=basic(ALICE))
            assert (missing.status_code, missing.json()["error"]) == (404, "NOT_FOUND"), path
        assert management.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code in (404, 405)
