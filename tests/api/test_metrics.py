"""``GET /metrics``: Prometheus text from a registry of each app's own, counting requests by route template,
actions by outcome and Kafka error code, and reading the replica's state (tokens, ACLs, sweeps, leadership,
ZooKeeper) at each scrape. Real app, real ZooKeeper; the connection state also on each backend (real brokers)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from tests.api.backends import Cluster
from tests.api.conftest import ADMIN, ALICE, BOB, basic, bearer, put_user
from tests.api.helpers import eventually

pytestmark = pytest.mark.only_on("zookeeper", "reads ZooKeeper's readings (child lists, sessions, leadership)")

OLD_NAME = "kts_zookeeper_session_state"  # deprecated: kts_cluster_connection_state{backend="zookeeper"}


def samples(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(client: TestClient, name: str, **labels: str) -> float:
    """One sample's value; 0 when the series does not exist yet (as Prometheus treats an absent counter)."""
    return samples(client).get((name, frozenset(labels.items())), 0.0)


def actions(client: TestClient, action: str, outcome: str, error_code: str = "") -> float:
    return value(client, "kts_actions_total", action=action, outcome=outcome, error_code=error_code)


def test_metrics_are_prometheus_text_without_authentication(client: TestClient) -> None:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    names = {family.name for family in text_string_to_metric_families(response.text)}
    assert {
        "kts_http_requests",
        "kts_http_request_duration_seconds",
        "kts_tokens",
        "kts_acl_entries",
        "kts_sweep_runs",
        "kts_swept_tokens",
        "kts_sweeper_leader",
        "kts_cluster_connection_state",
    } <= names


def test_metrics_are_not_in_the_openapi_document(client: TestClient) -> None:
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]


def test_create_renew_and_denials_are_counted_by_action_outcome_and_code(client: TestClient) -> None:
    created = client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert created.status_code == 201
    token = created.json()
    renewed = client.post(f"/v1/tokens/{token['tokenId']}/renew", json={}, headers=basic(ALICE))
    assert renewed.status_code == 200
    refused = client.post("/v1/tokens", json={}, headers=bearer(token))  # a token may not create tokens
    assert refused.status_code == 403
    hidden = client.get(f"/v1/tokens/{token['tokenId']}", headers=basic(BOB))
    assert hidden.status_code == 404
    wrong_password = client.get("/v1/tokens", headers=basic((ALICE[0], "not-her-password")))
    assert wrong_password.status_code == 401

    assert actions(client, "token.create", "succeeded") == 1
    assert actions(client, "token.renew", "succeeded") == 1
    assert actions(client, "token.create", "denied", "64") == 1
    assert actions(client, "token.describe", "denied", "62") == 1
    assert actions(client, "authentication", "denied") == 1


def test_requests_are_labelled_by_route_template_never_by_token_id(client: TestClient) -> None:
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    client.post(f"/v1/tokens/{token['tokenId']}/renew", json={}, headers=basic(ALICE))
    client.get(f"/v1/tokens/{token['tokenId']}", headers=basic(ALICE))
    client.get(f"/no/such/route/{token['tokenId']}")

    route = "/v1/tokens/{token_id}/renew"
    assert value(client, "kts_http_requests_total", method="POST", route=route, status="200") == 1
    assert value(client, "kts_http_request_duration_seconds_count", method="POST", route=route) == 1
    assert value(client, "kts_http_requests_total", method="POST", route="/v1/tokens", status="201") == 1
    assert value(client, "kts_http_requests_total", method="GET", route="/v1/tokens/{token_id}", status="200") == 1
    assert value(client, "kts_http_requests_total", method="GET", route="unmatched", status="404") == 1
    exposition = client.get("/metrics").text
    assert token["tokenId"] not in exposition
    assert token["hmac"] not in exposition


def test_live_tokens_follow_the_token_cache(client: TestClient) -> None:
    assert value(client, "kts_tokens") == 0
    first = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    client.post("/v1/tokens", json={}, headers=basic(BOB))
    assert value(client, "kts_tokens") == 2
    expired = client.post(
        f"/v1/tokens/{first['tokenId']}/expire", json={"expiryTimePeriodMs": -1}, headers=basic(ALICE)
    )
    assert expired.status_code == 200
    assert value(client, "kts_tokens") == 1
    assert actions(client, "token.expire", "succeeded") == 1


def test_replica_state_acl_entries_leadership_and_zookeeper(client: TestClient) -> None:
    acl = {
        "resourceType": "User",
        "resourceName": "User:alice",
        "patternType": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }
    assert client.post("/v1/acls", json=acl, headers=basic(ADMIN)).status_code == 201
    assert value(client, "kts_acl_entries") == 1
    assert actions(client, "acl.add", "succeeded") == 1
    eventually(lambda: value(client, "kts_sweeper_leader") == 1)  # the only replica is elected
    assert value(client, "kts_cluster_connection_state", backend="zookeeper", state="connected") == 1
    assert value(client, "kts_cluster_connection_state", backend="zookeeper", state="lost") == 0


def test_the_connection_state_names_its_backend_and_zookeeper_mode_keeps_the_old_name(cluster: Cluster) -> None:
    """``kts_zookeeper_session_state{state}`` became ``kts_cluster_connection_state{backend,state}``; dashboards and
    alerts on the old name keep working in ZooKeeper mode for this release (the same values, marked deprecated),
    and through the Kafka protocol only the new name exists."""
    client = cluster.client()
    exposition = client.get("/metrics").text
    scraped = samples(client)
    expected = "kafka" if cluster.protocol else "zookeeper"
    current = {
        dict(labels)["state"]: sample
        for (name, labels), sample in scraped.items()
        if name == "kts_cluster_connection_state"
    }
    assert current == {"connected": 1, "suspended": 0, "lost": 0}
    assert {dict(labels)["backend"] for (name, labels) in scraped if name == "kts_cluster_connection_state"} == {
        expected
    }
    old = {dict(labels)["state"]: sample for (name, labels), sample in scraped.items() if name == OLD_NAME}
    if cluster.protocol:
        assert old == {} and OLD_NAME not in exposition
    else:
        assert old == current
        assert f"# HELP {OLD_NAME} Deprecated, removed in the next release: use kts_cluster_connection_state" in (
            exposition
        )


def test_sweeps_and_swept_tokens_are_counted(make_client: Callable[..., TestClient], raw_zk: KazooClient) -> None:
    put_user(raw_zk, *ALICE)
    client = make_client(delegation_token_expiry_check_interval_ms=50)
    created = client.post("/v1/tokens", json={"maxLifetimeMs": 1}, headers=basic(ALICE))
    assert created.status_code == 201
    eventually(lambda: value(client, "kts_swept_tokens_total") == 1)
    assert value(client, "kts_sweep_runs_total") >= 1
    assert value(client, "kts_tokens") == 0
    assert actions(client, "token.sweep", "succeeded") == 1


def test_each_app_counts_only_its_own_requests(make_client: Callable[..., TestClient], raw_zk: KazooClient) -> None:
    put_user(raw_zk, *ALICE)
    first, second = make_client(service_id="one"), make_client(service_id="two")
    assert first.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
    assert actions(first, "token.create", "succeeded") == 1
    assert actions(second, "token.create", "succeeded") == 0
    eventually(lambda: value(second, "kts_tokens") == 1)  # the other replica's token reaches this cache


def test_metrics_behind_authentication_need_describe_on_the_cluster(
    make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    for name, password in (ADMIN, ALICE, BOB):
        put_user(raw_zk, name, password)
    client = make_client(metrics_auth_required=True)

    anonymous = client.get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "AUTHENTICATION_FAILED"
    assert "www-authenticate" in anonymous.headers
    refused = client.get("/metrics", headers=basic(ALICE))
    assert refused.status_code == 403
    assert refused.json()["code"] == 31
    assert "Describe on Cluster:kafka-cluster" in refused.json()["message"]

    assert client.get("/metrics", headers=basic(ADMIN)).status_code == 200  # a super user
    grant = {
        "resourceType": "Cluster",
        "resourceName": "kafka-cluster",
        "patternType": "LITERAL",
        "principal": "User:bob",
        "host": "*",
        "operation": "Describe",
        "permissionType": "Allow",
    }
    assert client.post("/v1/acls", json=grant, headers=basic(ADMIN)).status_code == 201
    eventually(lambda: client.get("/metrics", headers=basic(BOB)).status_code == 200)
    assert "kts_http_requests_total" in client.get("/metrics", headers=basic(BOB)).text


def test_docs_operations_lists_every_metric_kts_exports_and_no_other(client: TestClient) -> None:
    """The Monitoring table of docs/operations.md names each kts_* family as a scrape shows it (``_total`` on
    counters), so a metric added to the code without a line there fails here."""
    exported = set(re.findall(r"^# TYPE (kts_\w+) ", client.get("/metrics").text, flags=re.MULTILINE))
    operations = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
    documented = set(re.findall(r"^\| `(kts_\w+)` \|", operations.read_text(encoding="utf-8"), flags=re.MULTILINE))
    assert exported == documented
