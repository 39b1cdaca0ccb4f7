"""Every action, allowed or denied, leaves exactly one audit event with the right fields, on SQLite and
on a real PostgreSQL server; and the trail never holds an HMAC, a password or the secret key."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ADMIN, ALICE, BOB, CAROL, basic, bearer


@pytest.fixture
def audit_db_url(any_audit_db: str) -> str:
    return any_audit_db


class Trail:
    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.last_id = 0

    def new(self) -> list[dict[str, Any]]:
        """Events since the previous call, oldest first."""
        events = self.client.get("/v1/audit?limit=1000", headers=basic(ADMIN)).json()["events"]
        fresh = [event for event in reversed(events) if event["id"] > self.last_id]
        if events:
            self.last_id = max(self.last_id, events[0]["id"])
        return fresh

    def one(self) -> dict[str, Any]:
        fresh = self.new()
        assert len(fresh) == 1, fresh
        return fresh[0]


@pytest.fixture
def trail(client: TestClient) -> Trail:
    trail = Trail(client)
    trail.new()
    return trail


def test_token_lifecycle_events(client: TestClient, trail: Trail) -> None:
    created = client.post(
        "/v1/tokens",
        json={"renewers": ["User:bob"], "maxLifetimeMs": 3_600_000},
        headers=basic(ALICE) | {"X-Request-ID": "req-42"},
    ).json()
    event = trail.one()
    assert event["action"] == "token.create"
    assert event["outcome"] == "succeeded"
    assert (event["principal"], event["owner"], event["tokenRequester"], event["tokenId"]) == (
        "User:alice",
        "User:alice",
        "User:alice",
        created["tokenId"],
    )
    assert event["requestId"] == "req-42"
    assert event["clientAddress"] == "testclient"
    assert event["serviceId"] == "test"
    assert event["errorCode"] is None
    assert event["details"]["requestedMaxLifetimeMs"] == 3_600_000
    assert event["details"]["maxTimestamp"] == created["maxTimestamp"]
    assert event["details"]["renewers"] == ["User:bob"]

    client.post("/v1/tokens/renew", json={"hmac": created["hmac"], "renewTimePeriodMs": 1000}, headers=basic(BOB))
    renew = trail.one()
    assert (renew["action"], renew["outcome"], renew["principal"], renew["owner"], renew["tokenId"]) == (
        "token.renew",
        "succeeded",
        "User:bob",
        "User:alice",
        created["tokenId"],
    )
    assert renew["details"]["renewTimePeriodMs"] == 1000

    client.post(f"/v1/tokens/{created['tokenId']}/expire", json={}, headers=basic(ALICE))
    expire = trail.one()
    assert (expire["action"], expire["outcome"], expire["details"]["deleted"]) == ("token.expire", "succeeded", True)

    client.get("/v1/tokens", headers=basic(ALICE))
    describe = trail.one()
    assert (describe["action"], describe["outcome"], describe["details"]["returned"]) == (
        "token.describe",
        "succeeded",
        0,
    )


def test_refusals_are_recorded_with_their_kafka_code(client: TestClient, trail: Trail) -> None:
    client.post("/v1/tokens", json={"owner": "User:bob"}, headers=basic(ALICE))
    denied = trail.one()
    assert (denied["action"], denied["outcome"], denied["errorCode"], denied["owner"]) == (
        "token.create",
        "denied",
        65,
        "User:bob",
    )
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    trail.new()
    client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(CAROL))
    assert (trail.one()["errorCode"],) == (63,)
    client.post("/v1/tokens", json={}, headers=bearer(token))
    assert trail.one()["errorCode"] == 64
    client.post("/v1/tokens/renew", json={"hmac": "A" * 86 + "=="}, headers=basic(ALICE))
    not_found = trail.one()
    assert (not_found["action"], not_found["errorCode"], not_found["tokenId"]) == ("token.renew", 62, None)
    client.get("/v1/tokens/E8gTWaIxRUOaSRH7wY3N1w", headers=basic(ALICE))
    assert trail.one()["errorCode"] == 62


def test_verify_failures_and_authentication_failures(client: TestClient, trail: Trail) -> None:
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    trail.new()
    client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": "B" * 86 + "=="}, headers=basic(BOB))
    verify = trail.one()
    assert (verify["action"], verify["outcome"], verify["tokenId"], verify["principal"]) == (
        "token.verify",
        "denied",
        token["tokenId"],
        "User:bob",
    )
    client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=basic(BOB))
    assert trail.new() == []  # a successful verify is not an event; failures are

    client.get("/v1/tokens", headers=basic(("alice", "wrong-password")))
    failed = trail.one()
    assert (failed["action"], failed["outcome"], failed["principal"], failed["details"]["scheme"]) == (
        "authentication",
        "denied",
        "User:alice",
        "basic",
    )
    client.get("/v1/tokens", headers={"Authorization": f"Bearer {token['tokenId']}:{'C' * 86}=="})
    bad_bearer = trail.one()
    assert (bad_bearer["tokenId"], bad_bearer["details"]["scheme"]) == (token["tokenId"], "bearer")
    client.get("/v1/tokens")
    assert trail.one()["details"]["scheme"] == "none"


def test_acl_and_credential_events(client: TestClient, trail: Trail) -> None:
    acl = {
        "resourceType": "User",
        "resourceName": "User:joe",
        "patternType": "LITERAL",
        "principal": "User:nimbus",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }
    client.post("/v1/acls", json=acl, headers=basic(ADMIN))
    added = trail.one()
    assert (added["action"], added["outcome"], added["principal"]) == ("acl.add", "succeeded", "User:admin")
    assert added["details"]["resourceName"] == "User:joe"
    assert added["details"]["entries"][0]["operation"] == "CreateTokens"
    client.post("/v1/acls", json=acl, headers=basic(ALICE))
    assert (trail.one()["outcome"],) == ("denied",)
    client.delete("/v1/acls?resourceName=User:joe", headers=basic(ADMIN))
    removed = trail.one()
    assert (removed["action"], removed["details"]["removed"][0]["principal"]) == ("acl.remove", "User:nimbus")

    client.put(
        "/v1/users/dave/credentials",
        json={"mechanism": "SCRAM-SHA-256", "password": "dave-secret-pw"},
        headers=basic(ADMIN),
    )
    set_event = trail.one()
    assert (set_event["action"], set_event["owner"], set_event["details"]) == (
        "credential.set",
        "User:dave",
        {"user": "dave", "mechanism": "SCRAM-SHA-256", "iterations": 4096},
    )
    client.delete("/v1/users/dave/credentials?mechanism=SCRAM-SHA-256", headers=basic(ADMIN))
    assert trail.one()["action"] == "credential.delete"
    client.put("/v1/users/eve/credentials", json={"mechanism": "SCRAM-SHA-256", "password": "x"}, headers=basic(ALICE))
    assert (trail.one()["outcome"],) == ("denied",)


def test_audit_needs_describe_on_the_cluster(client: TestClient) -> None:
    response = client.get("/v1/audit", headers=basic(ALICE))
    assert response.status_code == 403
    assert response.json()["code"] == 31


def test_audit_filters_and_cursor(client: TestClient) -> None:
    for _ in range(5):
        client.post("/v1/tokens", json={}, headers=basic(ALICE))
    client.post("/v1/tokens", json={"owner": "User:bob"}, headers=basic(ALICE))
    creates = client.get("/v1/audit?action=token.create&outcome=succeeded&limit=2", headers=basic(ADMIN)).json()
    assert len(creates["events"]) == 2
    seen = [e["id"] for e in creates["events"]]
    cursor = creates["nextCursor"]
    while cursor:
        page = client.get(
            f"/v1/audit?action=token.create&outcome=succeeded&limit=2&cursor={cursor}", headers=basic(ADMIN)
        ).json()
        seen += [e["id"] for e in page["events"]]
        cursor = page["nextCursor"]
    assert len(seen) == 5 and seen == sorted(seen, reverse=True)
    denied = client.get("/v1/audit?outcome=denied&principal=User:alice", headers=basic(ADMIN)).json()["events"]
    assert [e["errorCode"] for e in denied] == [65]
    assert client.get("/v1/audit?cursor=abc", headers=basic(ADMIN)).status_code == 422
    assert client.get("/v1/audit?action=nonsense", headers=basic(ADMIN)).status_code == 422


def test_no_secret_in_audit_rows_logs_or_responses(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    from tests.conftest import SECRET

    caplog.set_level("DEBUG")
    secrets = {SECRET, ADMIN[1], ALICE[1], BOB[1], "dave-secret-pw"}
    bodies = []
    token = client.post("/v1/tokens", json={"renewers": ["User:bob"]}, headers=basic(ALICE)).json()
    secrets.add(token["hmac"])
    secrets.add(base64.b64decode(token["hmac"]).hex())
    for response in (
        client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(BOB)),
        client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(CAROL)),
        client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=basic(BOB)),
        client.get("/v1/tokens", headers=bearer(token)),
        client.get(f"/v1/tokens/{token['tokenId']}", headers=basic(ALICE)),
        client.get("/v1/tokens", headers=basic(("alice", "dave-secret-pw"))),
        client.put(
            "/v1/users/dave/credentials",
            json={"mechanism": "SCRAM-SHA-512", "password": "dave-secret-pw"},
            headers=basic(ADMIN),
        ),
        client.post("/v1/tokens", json={}, headers=bearer(token)),
        client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=basic(ALICE)),
        client.get("/v1/tokens", headers=bearer(token)),
        client.get("/v1/audit?limit=1000", headers=basic(ADMIN)),
        client.get("/readyz"),
        client.get("/v1/cluster/status", headers=basic(ADMIN)),
    ):
        bodies.append(response.text)
    everything = "\n".join([*bodies, caplog.text])
    for secret in secrets:
        assert secret not in everything
