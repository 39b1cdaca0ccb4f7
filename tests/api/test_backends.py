"""Kafka's token, ACL and credential semantics through kts's HTTP API, on every backend (tests/api/backends.py):
ZooKeeper, and the Kafka protocol on the real KRaft broker and on the real ZooKeeper-mode broker. The same
requests get the same answers; where the backends differ by design (the controller's renew cap, kts's principal
among the renewers) the test says so."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.cli.client.kafka_login import Credentials
from tests.api.backends import Cluster, User
from tests.api.helpers import eventually


def bearer(token: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token['tokenId']}:{token['hmac']}"}


def create(client: TestClient, caller: User, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/tokens", json=body, headers=caller.basic)
    assert response.status_code == 201, response.text
    return dict(response.json())


def grant(client: TestClient, admin: User, principal: str, operation: str, resource_type: str, name: str) -> None:
    acl = {
        "resourceType": resource_type,
        "resourceName": name,
        "patternType": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permissionType": "Allow",
    }
    response = client.post("/v1/acls", json=acl, headers=admin.basic)
    assert response.status_code == 201, response.text


def owned_by(client: TestClient, caller: User, owner: User) -> list[dict[str, Any]]:
    response = client.get("/v1/tokens", params={"owner": owner.principal}, headers=caller.basic)
    assert response.status_code == 200, response.text
    return list(response.json()["tokens"])


def test_create_describe_verify_and_bearer_login(cluster: Cluster) -> None:
    alice, stranger = cluster.user("alice"), cluster.user("stranger")
    client = cluster.client()
    token = create(client, alice, maxLifetimeMs=3_600_000)
    assert token["owner"] == alice.principal
    assert token["tokenRequester"] == alice.principal  # the HTTP caller, not kts's own principal
    assert len(token["tokenId"]) == 22 and token["maxTimestamp"] - token["issueTimestamp"] == 3_600_000
    if cluster.protocol:  # kts adds its own principal so that it can renew and expire for its callers
        assert token["renewers"] == [cluster.kts_principal]
    else:
        assert token["renewers"] == []
    assert [t["tokenId"] for t in owned_by(client, alice, alice)] == [token["tokenId"]]
    assert owned_by(client, stranger, alice) == []  # not visible to a stranger
    assert client.get(f"/v1/tokens/{token['tokenId']}", headers=stranger.basic).status_code == 404
    verified = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=alice.basic
    )
    assert verified.status_code == 200 and verified.json()["principal"] == alice.principal
    wrong = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": "A" * 86 + "=="}, headers=alice.basic
    )
    assert wrong.status_code == 401
    me = client.get("/v1/tokens", headers=bearer(token))
    assert me.status_code == 200 and token["tokenId"] in [t["tokenId"] for t in me.json()["tokens"]]


@pytest.mark.kafka_matrix("kip-373")
def test_another_owner_needs_create_tokens_and_token_callers_cannot_mint(cluster: Cluster) -> None:
    alice, bob = cluster.user("alice"), cluster.user("bob")
    client = cluster.client()
    refused = client.post("/v1/tokens", json={"owner": bob.principal}, headers=alice.basic)
    assert refused.status_code == 403 and refused.json()["code"] == 65
    grant(client, cluster.admin, alice.principal, "CreateTokens", "User", bob.principal)
    made = create(client, alice, owner=bob.principal)
    assert (made["owner"], made["tokenRequester"]) == (bob.principal, alice.principal)
    # The requester sees the token it asked for (KIP-373), in a fresh replica too (the cluster recorded kts).
    again = cluster.client()
    eventually(lambda: made["tokenId"] in [t["tokenId"] for t in owned_by(again, alice, bob)])
    assert {t["tokenRequester"] for t in owned_by(again, alice, bob)} == {alice.principal}
    token_caller = client.post("/v1/tokens", json={}, headers=bearer(made))
    assert token_caller.status_code == 403 and token_caller.json()["code"] == 64
    bad_renewer = client.post("/v1/tokens", json={"renewers": ["Group:ops"]}, headers=alice.basic)
    assert bad_renewer.status_code in (400, 422) or bad_renewer.json().get("code") == 67


def test_the_create_events_keep_the_job_and_find_it(cluster: Cluster) -> None:
    """The job a create names is kept in its audit events (succeeded and denied), never on the cluster; the
    token's id leads to it, and its id to the token (issue 33)."""
    alice, bob = cluster.user("alice"), cluster.user("bob")
    client = cluster.client()
    job = {"framework": "spark", "id": f"app-{alice.name}", "name": "nightly-etl", "user": "joe"}
    token = create(client, alice, job=job)
    refused = client.post("/v1/tokens", json={"owner": bob.principal, "job": job}, headers=alice.basic)
    assert refused.status_code == 403

    def audit(**filters: str) -> list[dict[str, Any]]:
        response = client.get("/v1/audit", params=filters, headers=cluster.admin.basic)
        assert response.status_code == 200, response.text
        return list(response.json()["events"])

    (made,) = audit(tokenId=token["tokenId"], action="token.create")
    assert (made["outcome"], made["tokenId"], made["job"]) == ("succeeded", token["tokenId"], job)
    found = audit(jobId=job["id"])
    assert [(event["outcome"], event["owner"], event["job"]) for event in found] == [
        ("denied", bob.principal, job),
        ("succeeded", alice.principal, job),
    ]
    assert found[1]["tokenId"] == token["tokenId"]


@pytest.mark.kafka_matrix("expire-renew")
def test_renew_and_expire_by_id_and_by_hmac(cluster: Cluster) -> None:
    alice, bob = cluster.user("alice"), cluster.user("bob")
    client = cluster.client()
    token = create(client, alice, maxLifetimeMs=3_600_000)
    renewed = client.post(
        f"/v1/tokens/{token['tokenId']}/renew", json={"renewTimePeriodMs": 60_000}, headers=alice.basic
    )
    assert renewed.status_code == 200, renewed.text
    assert renewed.json()["expiryTimestamp"] <= token["maxTimestamp"]
    shown = client.get(f"/v1/tokens/{token['tokenId']}", headers=alice.basic).json()
    assert shown["expiryTimestamp"] == renewed.json()["expiryTimestamp"]  # what the store (controller) answered
    stranger = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=bob.basic)
    assert stranger.status_code == 403 and stranger.json()["code"] == 63
    by_hmac = client.post(
        "/v1/tokens/expire", json={"hmac": token["hmac"], "expiryTimePeriodMs": 120_000}, headers=alice.basic
    )
    assert by_hmac.status_code == 200 and by_hmac.json()["tokenId"] == token["tokenId"]
    gone = client.post(f"/v1/tokens/{token['tokenId']}/expire", json={"expiryTimePeriodMs": -1}, headers=alice.basic)
    assert gone.status_code == 200
    assert client.get(f"/v1/tokens/{token['tokenId']}", headers=alice.basic).status_code == 404
    refused = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=alice.basic
    )
    assert refused.status_code == 401
    assert client.get("/v1/tokens", headers=bearer(token)).status_code == 401
    again = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=alice.basic)
    assert again.status_code == 404 and again.json()["code"] == 62


def test_super_users_renew_and_expire_others_tokens(cluster: Cluster) -> None:
    alice = cluster.user("alice")
    client = cluster.client()
    token = create(client, alice)
    renewed = client.post(f"/v1/tokens/{token['tokenId']}/renew", json={}, headers=cluster.admin.basic)
    assert renewed.status_code == 200
    expired = client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=cluster.admin.basic)
    assert expired.status_code == 200


def test_pagination_by_token_id(cluster: Cluster) -> None:
    alice = cluster.user("alice")
    client = cluster.client()
    made = sorted(create(client, alice)["tokenId"] for _ in range(5))
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"owner": alice.principal, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/tokens", params=params, headers=alice.basic).json()
        seen += [t["tokenId"] for t in page["tokens"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == made


@pytest.mark.kafka_matrix("scram-users")
def test_credentials_through_the_api_are_logins(cluster: Cluster) -> None:
    carol_name = f"carol-{cluster.user('x').name[-8:]}"
    client = cluster.client()
    put = client.put(
        f"/v1/users/{carol_name}/credentials",
        json={"mechanism": "SCRAM-SHA-512", "password": "carol-pw-1"},
        headers=cluster.admin.basic,
    )
    assert put.status_code in (200, 204), put.text
    carol = User(carol_name, "carol-pw-1")
    eventually(lambda: client.get("/v1/tokens", headers=carol.basic).status_code == 200)
    described = client.get(f"/v1/users/{carol_name}/credentials", headers=cluster.admin.basic)
    assert described.status_code == 200 and "SCRAM-SHA-512" in described.text and "salt" not in described.text
    if cluster.broker is not None:  # the broker itself takes the password kts wrote
        cluster.broker.wait_for_login(Credentials(carol_name, "carol-pw-1"), ("SCRAM-SHA-512",))
    deleted = client.delete(
        f"/v1/users/{carol_name}/credentials", params={"mechanism": "SCRAM-SHA-512"}, headers=cluster.admin.basic
    )
    assert deleted.status_code in (200, 204), deleted.text
    fresh = cluster.client()  # no remembered password: the credential is gone everywhere
    eventually(lambda: fresh.get("/v1/tokens", headers=carol.basic).status_code == 401)
    missing = client.delete(
        f"/v1/users/{carol_name}/credentials", params={"mechanism": "SCRAM-SHA-512"}, headers=cluster.admin.basic
    )
    assert missing.status_code == 404


def test_revoke_on_credential_delete(cluster: Cluster) -> None:
    dave_name = f"dave-{cluster.user('x').name[-8:]}"
    client = cluster.client(token_revoke_on_credential_delete=True)
    client.put(
        f"/v1/users/{dave_name}/credentials",
        json={"mechanism": "SCRAM-SHA-512", "password": "dave-pw-123"},
        headers=cluster.admin.basic,
    )
    dave = User(dave_name, "dave-pw-123")
    eventually(lambda: client.get("/v1/tokens", headers=dave.basic).status_code == 200)
    token = create(client, dave)
    client.delete(
        f"/v1/users/{dave_name}/credentials", params={"mechanism": "SCRAM-SHA-512"}, headers=cluster.admin.basic
    )
    assert client.get("/v1/tokens", headers=bearer(token)).status_code == 401
    verify = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=cluster.admin.basic
    )
    assert verify.status_code == 401


@pytest.mark.kafka_matrix("kts-grants")
def test_acls_written_and_listed(cluster: Cluster) -> None:
    alice = cluster.user("alice")
    client = cluster.client()
    grant(client, cluster.admin, alice.principal, "DescribeTokens", "User", "User:someone")
    listed = client.get("/v1/acls", params={"principal": alice.principal}, headers=cluster.admin.basic).json()["acls"]
    assert [(a["resourceType"], a["resourceName"], a["operation"]) for a in listed] == [
        ("User", "User:someone", "DescribeTokens")
    ]
    deleted = client.request("DELETE", "/v1/acls", params={"principal": alice.principal}, headers=cluster.admin.basic)
    assert deleted.status_code == 200 and len(deleted.json()["deleted"]) == 1
    assert (
        client.get("/v1/acls", params={"principal": alice.principal}, headers=cluster.admin.basic).json()["acls"] == []
    )


@pytest.mark.kafka_matrix("token-login", "expire-renew")
def test_a_broker_takes_the_token_until_kts_expires_it(cluster: Cluster) -> None:
    if cluster.broker is None:
        pytest.skip("the ZooKeeper backend's broker tests live in tests/e2e/kafka")
    alice = cluster.user("alice")
    client = cluster.client()
    token = create(client, alice)
    credentials = Credentials(token["tokenId"], token["hmac"], token=True)
    cluster.broker.wait_for_login(credentials)
    client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=alice.basic)
    eventually(lambda: _refused(cluster, credentials), timeout_s=60)


def _refused(cluster: Cluster, credentials: Credentials) -> bool:
    assert cluster.broker is not None
    try:
        cluster.broker.login(credentials)
    except Exception:
        return True
    return False


def test_revoke_in_bulk_by_owner(cluster: Cluster) -> None:
    alice, bob = cluster.user("alice"), cluster.user("bob")
    client = cluster.client()
    mine = [create(client, alice) for _ in range(3)]
    kept = create(client, bob)
    revoked = client.post("/v1/tokens/revoke", json={"owner": alice.principal}, headers=cluster.admin.basic)
    assert revoked.status_code == 200, revoked.text
    assert sorted(revoked.json()["revoked"]) == sorted(token["tokenId"] for token in mine)
    assert all(client.get("/v1/tokens", headers=bearer(token)).status_code == 401 for token in mine)
    assert client.get("/v1/tokens", headers=bearer(kept)).status_code == 200


def test_the_owner_quota_holds(cluster: Cluster) -> None:
    alice = cluster.user("alice")
    client = cluster.client(token_quota_per_owner=2)
    first = create(client, alice)
    create(client, alice)
    refused = client.post("/v1/tokens", json={}, headers=alice.basic)
    assert refused.status_code == 429 and refused.json()["error"] == "TOKEN_QUOTA_EXCEEDED", refused.text
    client.post(f"/v1/tokens/{first['tokenId']}/expire", json={}, headers=alice.basic)
    create(client, alice)  # room again once one is gone


def test_the_cluster_status_names_the_backend(cluster: Cluster) -> None:
    """An operator tells from the cluster's status how a replica reaches the cluster (``kafka``: the Kafka
    protocol, whatever mode the brokers run in), and which connection a failing ``cluster`` check means; /readyz
    tells strangers neither."""
    client = cluster.client()
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {"status": "ready", "reason": "ok"}
    status = client.get("/v1/cluster/status", headers=cluster.admin.basic)
    assert status.status_code == 200, status.text
    assert status.json()["backend"] == ("kafka" if cluster.protocol else "zookeeper")
    assert status.json()["checks"]["cluster"] == "ok"
    assert (status.json()["migration"] is None) == cluster.protocol  # ZooKeeper's view of the migration
