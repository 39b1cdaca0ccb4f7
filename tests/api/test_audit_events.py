"""Every action, allowed or denied, leaves exactly one audit event with the right fields, on SQLite and
on a real PostgreSQL server; and the trail never holds an HMAC, a password or the secret key."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.backends import User
from tests.api.conftest import basic, bearer


@pytest.fixture
def audit_db_url(any_audit_db: str) -> str:
    return any_audit_db


class Trail:
    def __init__(self, client: TestClient, admin: User) -> None:
        self.client = client
        self.admin = admin
        self.last_id = 0

    def new(self) -> list[dict[str, Any]]:
        """Events since the previous call, oldest first."""
        events = self.client.get("/v1/audit?limit=1000", headers=self.admin.basic).json()["events"]
        fresh = [event for event in reversed(events) if event["id"] > self.last_id]
        if events:
            self.last_id = max(self.last_id, events[0]["id"])
        return fresh

    def one(self) -> dict[str, Any]:
        fresh = self.new()
        assert len(fresh) == 1, fresh
        return fresh[0]


@pytest.fixture
def trail(client: TestClient, admin: User) -> Trail:
    trail = Trail(client, admin)
    trail.new()
    return trail


def test_token_lifecycle_events(client: TestClient, trail: Trail, alice: User, bob: User) -> None:
    created = client.post(
        "/v1/tokens",
        json={"renewers": [bob.principal], "maxLifetimeMs": 3_600_000},
        headers=alice.basic | {"X-Request-ID": "req-42"},
    ).json()
    event = trail.one()
    assert event["action"] == "token.create"
    assert event["outcome"] == "succeeded"
    assert (event["principal"], event["owner"], event["tokenRequester"], event["tokenId"]) == (
        alice.principal,
        alice.principal,
        alice.principal,
        created["tokenId"],
    )
    assert event["requestId"] == "req-42"
    assert event["clientAddress"] == "testclient"
    assert event["serviceId"] == "test"
    assert event["errorCode"] is None
    assert event["details"]["requestedMaxLifetimeMs"] == 3_600_000
    assert event["details"]["maxTimestamp"] == created["maxTimestamp"]
    assert event["details"]["renewers"] == [bob.principal]

    client.post("/v1/tokens/renew", json={"hmac": created["hmac"], "renewTimePeriodMs": 1000}, headers=bob.basic)
    renew = trail.one()
    assert (renew["action"], renew["outcome"], renew["principal"], renew["owner"], renew["tokenId"]) == (
        "token.renew",
        "succeeded",
        bob.principal,
        alice.principal,
        created["tokenId"],
    )
    assert renew["details"]["renewTimePeriodMs"] == 1000

    client.post(f"/v1/tokens/{created['tokenId']}/expire", json={}, headers=alice.basic)
    expire = trail.one()
    assert (expire["action"], expire["outcome"], expire["details"]["deleted"]) == ("token.expire", "succeeded", True)

    client.get("/v1/tokens", headers=alice.basic)
    describe = trail.one()
    assert (describe["action"], describe["outcome"], describe["details"]["returned"]) == (
        "token.describe",
        "succeeded",
        0,
    )


def test_refusals_are_recorded_with_their_kafka_code(
    client: TestClient, trail: Trail, alice: User, bob: User, carol: User
) -> None:
    client.post("/v1/tokens", json={"owner": bob.principal}, headers=alice.basic)
    denied = trail.one()
    assert (denied["action"], denied["outcome"], denied["errorCode"], denied["owner"]) == (
        "token.create",
        "denied",
        65,
        bob.principal,
    )
    token = client.post("/v1/tokens", json={}, headers=alice.basic).json()
    trail.new()
    client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=carol.basic)
    assert (trail.one()["errorCode"],) == (63,)
    client.post("/v1/tokens", json={}, headers=bearer(token))
    assert trail.one()["errorCode"] == 64
    client.post("/v1/tokens/renew", json={"hmac": "A" * 86 + "=="}, headers=alice.basic)
    not_found = trail.one()
    assert (not_found["action"], not_found["errorCode"], not_found["tokenId"]) == ("token.renew", 62, None)
    client.get("/v1/tokens/E8gTWaIxRUOaSRH7wY3N1w", headers=alice.basic)
    assert trail.one()["errorCode"] == 62


def test_verify_failures_and_authentication_failures(client: TestClient, trail: Trail, alice: User, bob: User) -> None:
    token = client.post("/v1/tokens", json={}, headers=alice.basic).json()
    trail.new()
    client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": "B" * 86 + "=="}, headers=bob.basic)
    verify = trail.one()
    assert (verify["action"], verify["outcome"], verify["tokenId"], verify["principal"]) == (
        "token.verify",
        "denied",
        token["tokenId"],
        bob.principal,
    )
    client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bob.basic)
    assert trail.new() == []  # a successful verify is not an event; failures are

    client.get("/v1/tokens", headers=basic((alice.name, "wrong-password")))
    failed = trail.one()
    assert (failed["action"], failed["outcome"], failed["principal"], failed["details"]["scheme"]) == (
        "authentication",
        "denied",
        alice.principal,
        "basic",
    )
    client.get("/v1/tokens", headers={"Authorization": f"Bearer {token['tokenId']}:{'C' * 86}=="})
    bad_bearer = trail.one()
    assert (bad_bearer["tokenId"], bad_bearer["details"]["scheme"]) == (token["tokenId"], "bearer")
    client.get("/v1/tokens")
    assert trail.one()["details"]["scheme"] == "none"


def test_acl_and_credential_events(client: TestClient, trail: Trail, admin: User, alice: User) -> None:
    joe, dave, eve = (f"{name}-{alice.name}" for name in ("joe", "dave", "eve"))  # names of the test's own
    acl = {
        "resourceType": "User",
        "resourceName": f"User:{joe}",
        "patternType": "LITERAL",
        "principal": f"User:nimbus-{alice.name}",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }
    client.post("/v1/acls", json=acl, headers=admin.basic)
    added = trail.one()
    assert (added["action"], added["outcome"], added["principal"]) == ("acl.add", "succeeded", admin.principal)
    assert added["details"]["resourceName"] == f"User:{joe}"
    assert added["details"]["entries"][0]["operation"] == "CreateTokens"
    client.post("/v1/acls", json=acl, headers=alice.basic)
    assert (trail.one()["outcome"],) == ("denied",)
    client.delete("/v1/acls", params={"resourceName": f"User:{joe}"}, headers=admin.basic)
    removed = trail.one()
    assert (removed["action"], removed["details"]["removed"][0]["principal"]) == ("acl.remove", acl["principal"])

    client.put(
        f"/v1/users/{dave}/credentials",
        json={"mechanism": "SCRAM-SHA-256", "password": "dave-secret-pw"},
        headers=admin.basic,
    )
    set_event = trail.one()
    assert (set_event["action"], set_event["owner"], set_event["details"]) == (
        "credential.set",
        f"User:{dave}",
        {"user": dave, "mechanism": "SCRAM-SHA-256", "iterations": 4096},
    )
    client.delete(f"/v1/users/{dave}/credentials?mechanism=SCRAM-SHA-256", headers=admin.basic)
    assert trail.one()["action"] == "credential.delete"
    client.put(
        f"/v1/users/{eve}/credentials", json={"mechanism": "SCRAM-SHA-256", "password": "x"}, headers=alice.basic
    )
    assert (trail.one()["outcome"],) == ("denied",)


def test_audit_needs_describe_on_the_cluster(client: TestClient, alice: User) -> None:
    response = client.get("/v1/audit", headers=alice.basic)
    assert response.status_code == 403
    assert response.json()["code"] == 31


def test_audit_filters_and_cursor(client: TestClient, admin: User, alice: User, bob: User) -> None:
    for _ in range(5):
        client.post("/v1/tokens", json={}, headers=alice.basic)
    client.post("/v1/tokens", json={"owner": bob.principal}, headers=alice.basic)
    # alice's: on the Kafka protocol the trail also holds the create events kts reconstructs for the tokens it
    # finds on the session's shared broker at start
    mine = {"action": "token.create", "outcome": "succeeded", "principal": alice.principal, "limit": "2"}
    creates = client.get("/v1/audit", params=mine, headers=admin.basic).json()
    assert len(creates["events"]) == 2
    seen = [e["id"] for e in creates["events"]]
    cursor = creates["nextCursor"]
    while cursor:
        page = client.get("/v1/audit", params=mine | {"cursor": cursor}, headers=admin.basic).json()
        seen += [e["id"] for e in page["events"]]
        cursor = page["nextCursor"]
    assert len(seen) == 5 and seen == sorted(seen, reverse=True)
    denied = client.get(
        "/v1/audit", params={"outcome": "denied", "principal": alice.principal}, headers=admin.basic
    ).json()["events"]
    assert [e["errorCode"] for e in denied] == [65]
    assert client.get("/v1/audit?cursor=abc", headers=admin.basic).status_code == 422
    assert client.get("/v1/audit?action=nonsense", headers=admin.basic).status_code == 422


def test_no_secret_in_audit_rows_logs_or_responses(
    client: TestClient, caplog: pytest.LogCaptureFixture, admin: User, alice: User, bob: User, carol: User
) -> None:
    from tests.conftest import SECRET

    caplog.set_level("DEBUG")
    secrets = {SECRET, admin.password, alice.password, bob.password, "dave-secret-pw"}
    bodies = []
    token = client.post("/v1/tokens", json={"renewers": [bob.principal]}, headers=alice.basic).json()
    secrets.add(token["hmac"])
    secrets.add(base64.b64decode(token["hmac"]).hex())
    for response in (
        client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=bob.basic),
        client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=carol.basic),
        client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bob.basic),
        client.get("/v1/tokens", headers=bearer(token)),
        client.get(f"/v1/tokens/{token['tokenId']}", headers=alice.basic),
        client.get("/v1/tokens", headers=basic((alice.name, "dave-secret-pw"))),
        client.put(
            f"/v1/users/dave-{alice.name}/credentials",
            json={"mechanism": "SCRAM-SHA-512", "password": "dave-secret-pw"},
            headers=admin.basic,
        ),
        client.post("/v1/tokens", json={}, headers=bearer(token)),
        client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=alice.basic),
        client.get("/v1/tokens", headers=bearer(token)),
        client.get("/v1/audit?limit=1000", headers=admin.basic),
        client.get("/readyz"),
        client.get("/v1/cluster/status", headers=admin.basic),
    ):
        bodies.append(response.text)
    everything = "\n".join([*bodies, caplog.text])
    for secret in secrets:
        assert secret not in everything
