"""kts in ZooKeeper mode beside a cluster that starts migrating to KRaft (the znodes written as Kafka 3.9 writes
them, tests/kafka_znodes.py): from the KRaft controller's claim on, every token, ACL and credential write answers
503 CLUSTER_MIGRATING and is audited as failed, reads go on, /readyz (a status and a reason word), the cluster's
status (``GET /v1/cluster/status``, for operators) and the metrics say why; a write in flight at the claim is never
answered 201. A cluster with brokers but no ``/controller_epoch`` is judged the same way (fail closed)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.cli.client.cluster import status_text
from app.domain.audit import AuditEvent, RequestContext
from app.storage.zk.znodes import TokenZNode
from tests import kafka_znodes
from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.api.helpers import eventually

pytestmark = pytest.mark.only_on("zookeeper", "migration phases are ZooKeeper's (the znodes Kafka 3.9 writes)")

HMAC_OF_NOTHING = "A" * 86 + "=="


@pytest.fixture
def cluster(raw_zk: KazooClient) -> KazooClient:
    """A ZooKeeper-mode cluster: one broker registered, its controller elected."""
    kafka_znodes.register_broker(raw_zk, 0)
    kafka_znodes.elect_zookeeper_controller(raw_zk, 0)
    return raw_zk


def _status(client: TestClient) -> dict[str, Any]:
    """``GET /v1/cluster/status`` as the super user: the details /readyz tells no stranger."""
    response = client.get("/v1/cluster/status", headers=basic(ADMIN))
    assert response.status_code == 200, response.text
    return dict(response.json())


def _phase(client: TestClient) -> str:
    return str(_status(client)["migration"]["phase"])


def test_the_cluster_status_tells_the_mode_and_the_clusters_phase(cluster: KazooClient, client: TestClient) -> None:
    assert client.get("/readyz").json() == {"status": "ready", "reason": "ok"}
    body = _status(client)
    assert (body["status"], body["backend"]) == ("ready", "zookeeper")
    assert body["migration"] == {
        "phase": "zookeeper",
        "writes": "allowed",
        "reason": "ZooKeeper mode, no migration to KRaft begun",
        "clusterId": "kts-test-cluster-id-0w",
        "controller": {"nodeId": 0, "kraftControllerEpoch": -1},
        "kraftMetadataOffset": None,
        "zookeeperBrokers": 1,
        "tokensKtsCannotRenew": None,  # kts's principal on bootstrap.servers is not configured
    }
    assert 'kts_cluster_migration_phase{phase="zookeeper"} 1.0' in client.get("/metrics").text


def test_the_cluster_status_counts_the_live_tokens_kts_could_not_renew_after_a_switch(
    cluster: KazooClient, make_client: Any, raw_zk: KazooClient
) -> None:
    """token.renewers.add names kts's principal on bootstrap.servers a renewer of the tokens made from now on; those
    made before lack it, and ``kts cluster status`` says how many are left to prepare."""
    for name, password in (ADMIN, ALICE):
        put_user(raw_zk, name, password)
    before = make_client()
    assert before.post("/v1/tokens", json={"renewers": ["User:bob"]}, headers=basic(ALICE)).status_code == 201
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kts" password="pw";'
    prepared = make_client(token_renewers_add="User:kts", admin_sasl_jaas_config=jaas)
    made = prepared.post("/v1/tokens", json={"renewers": ["User:bob"]}, headers=basic(ALICE))
    assert made.json()["renewers"] == ["User:bob", "User:kts"]
    eventually(lambda: _status(prepared)["migration"]["tokensKtsCannotRenew"] == 1)
    assert "tokensKtsCannotRenew" not in prepared.get("/readyz").text  # never told a stranger, never counted there
    status = status_text(_status(prepared))
    assert "tokens kts cannot renew after a switch: 1" in status


def test_from_the_claim_on_writes_answer_503_and_reads_go_on(cluster: KazooClient, client: TestClient) -> None:
    before = client.post("/v1/tokens", json={"renewers": ["User:bob"]}, headers=basic(ALICE))
    assert before.status_code == 201
    kafka_znodes.provision_kraft_quorum(cluster)
    eventually(lambda: _phase(client) == "pre-migration")
    during_wait = client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert during_wait.status_code == 201  # the controller has not claimed: it will copy this token

    kafka_znodes.claim_for_kraft(cluster)
    eventually(lambda: _phase(client) == "migrating")

    hmac = before.json()["hmac"]
    refused = [
        client.post("/v1/tokens", json={}, headers=basic(ALICE)),
        client.post("/v1/tokens/renew", json={"hmac": hmac}, headers=basic(ALICE)),
        client.post("/v1/tokens/expire", json={"hmac": hmac, "expiryTimePeriodMs": -1}, headers=basic(ALICE)),
        client.post(
            "/v1/acls",
            json={
                "resourceType": "User",
                "resourceName": "User:alice",
                "principal": "User:bob",
                "operation": "CreateTokens",
                "permissionType": "Allow",
            },
            headers=basic(ADMIN),
        ),
        client.put(
            "/v1/users/dave/credentials",
            json={"mechanism": "SCRAM-SHA-512", "password": "dave-pw"},
            headers=basic(ADMIN),
        ),
        client.request("DELETE", "/v1/users/bob/credentials?mechanism=SCRAM-SHA-512", headers=basic(ADMIN)),
    ]
    for response in refused:
        assert response.status_code == 503, response.text
        assert response.json()["error"] == "CLUSTER_MIGRATING"
        assert "bootstrap.servers" in response.json()["message"]
        assert int(response.headers["retry-after"]) > 0

    token_id = before.json()["tokenId"]
    assert client.get(f"/v1/tokens/{token_id}", headers=basic(ALICE)).status_code == 200  # reads go on
    assert client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    verified = client.post("/v1/tokens/verify", json={"tokenId": token_id, "hmac": hmac}, headers=basic(ALICE))
    assert verified.status_code == 200
    bearer = {"Authorization": f"Bearer {token_id}:{hmac}"}
    assert client.get(f"/v1/tokens/{token_id}", headers=bearer).status_code == 200

    ready = client.get("/readyz")
    assert ready.status_code == 200  # ready to serve reads; the body says writes are refused, in a word
    assert ready.json() == {"status": "read-only", "reason": "migrating"}
    status = _status(client)
    assert (status["status"], status["reason"]) == ("read-only", "migrating")
    assert status["migration"]["writes"] == "refused"
    assert status["migration"]["controller"] == {"nodeId": 3000, "kraftControllerEpoch": 1}
    metrics = client.get("/metrics").text
    assert 'kts_cluster_migration_phase{phase="migrating"} 1.0' in metrics
    assert 'kts_cluster_migration_phase{phase="zookeeper"} 0.0' in metrics

    events = client.get("/v1/audit?outcome=failed&limit=100", headers=basic(ADMIN)).json()["events"]
    failed = sorted(event["action"] for event in events if event["details"].get("error") == "CLUSTER_MIGRATING")
    assert failed == sorted(
        ["token.create", "token.renew", "token.expire", "acl.add", "credential.set", "credential.delete"]
    )


def test_a_create_in_flight_at_the_claim_is_refused_and_audited_as_failed(
    cluster: KazooClient, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim lands between the audited decision and the ZooKeeper write: whether the watch has seen it yet or
    only the transaction's check catches it, the answer is 503 and no token znode exists."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    append = runtime.audit_log.append

    def claim_then_append(event: AuditEvent, context: RequestContext) -> int:
        if event.action.value == "token.create" and cluster.exists("/migration") is None:
            kafka_znodes.provision_kraft_quorum(cluster)
            kafka_znodes.claim_for_kraft(cluster)
        return int(append(event, context))

    monkeypatch.setattr(runtime.audit_log, "append", claim_then_append)
    response = client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert response.status_code == 503
    assert response.json()["error"] == "CLUSTER_MIGRATING"
    assert cluster.get_children(TokenZNode.ROOT) == []
    assert cluster.get_children("/delegation_token/token_changes") == []
    (event,) = client.get("/v1/audit?action=token.create", headers=basic(ADMIN)).json()["events"]
    assert (event["outcome"], event["details"]["error"]) == ("failed", "CLUSTER_MIGRATING")


def test_a_replica_started_on_a_migrated_cluster_refuses_writes_from_the_first_request(
    cluster: KazooClient, make_client: Any
) -> None:
    from tests.api.conftest import put_user

    put_user(cluster, *ALICE)
    put_user(cluster, *ADMIN)  # reads the cluster's status
    kafka_znodes.provision_kraft_quorum(cluster)
    kafka_znodes.claim_for_kraft(cluster)
    kafka_znodes.record_migration_done(cluster)
    cluster.delete("/brokers/ids/0")
    client = make_client()
    assert _phase(client) == "migrated"
    response = client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert response.status_code == 503
    assert response.json()["error"] == "CLUSTER_MIGRATING"
    assert _status(client)["migration"]["kraftMetadataOffset"] == 57
    assert client.get("/readyz").json() == {"status": "read-only", "reason": "migrated"}


def test_brokers_without_a_controller_epoch_refuse_writes_and_say_why(raw_zk: KazooClient, client: TestClient) -> None:
    """Brokers registered but no /controller_epoch (deleted, or a cluster kts does not understand): the fence has no
    version to check, so kts refuses writes as during a migration, names the cause, and writes again once a
    controller election writes the epoch."""
    kafka_znodes.register_broker(raw_zk, 0)
    kafka_znodes.register_broker(raw_zk, 1)
    eventually(lambda: _phase(client) == "unknown")
    refused = client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"] == "CLUSTER_MIGRATING"
    assert "2 brokers are registered in /brokers/ids but /controller_epoch is missing" in refused.json()["message"]
    assert int(refused.headers["retry-after"]) > 0
    assert client.get("/readyz").json() == {"status": "read-only", "reason": "unknown"}
    assert _status(client)["migration"]["writes"] == "refused"
    assert raw_zk.get_children(TokenZNode.ROOT) == []

    kafka_znodes.elect_zookeeper_controller(raw_zk, 0)
    eventually(lambda: _phase(client) == "zookeeper")
    assert client.post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
