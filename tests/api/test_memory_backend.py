"""The whole app (``create_app``: its lifespan, the runtime, every service) on the in-memory backend, no cluster
started: a token is created, described, renewed, verified, expired and gone over HTTP, as on ZooKeeper; the
replica reports itself ready on the ``memory`` backend. The proof that a third backend needs nothing of
app/service/ beyond the ``ClusterBackend`` its assembly supplies (docs/architecture.md#adding-a-backend)."""

from __future__ import annotations

import base64
import time
from pathlib import Path

from tests.memory_backend import add_user, memory_client, memory_settings

DAY = 86_400_000


def test_a_token_is_created_described_renewed_and_expired_over_http(tmp_path: Path) -> None:
    with memory_client(memory_settings(tmp_path)) as (client, backend):
        alice = add_user(backend, "alice", "alice-secret")
        admin = add_user(backend, "admin", "admin-secret")

        created = client.post("/v1/tokens", json={"renewers": ["User:bob"]}, headers=alice)
        assert created.status_code == 201, created.text
        token = created.json()
        assert token["owner"] == "User:alice" and token["renewers"] == ["User:bob"]
        assert backend.token_store.get(token["tokenId"]) is not None  # it is the memory backend's token

        described = client.get(f"/v1/tokens/{token['tokenId']}", headers=alice)
        assert described.status_code == 200 and described.json()["tokenId"] == token["tokenId"]
        assert "hmac" not in described.json()  # a describe never shows the secret
        listed = client.get("/v1/tokens", headers=admin).json()
        assert [found["tokenId"] for found in listed["tokens"]] == [token["tokenId"]]

        before_ms = int(time.time() * 1000)
        renewed = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=alice)
        assert renewed.status_code == 200, renewed.text
        assert renewed.json()["expiryTimestamp"] >= before_ms + DAY - 1000
        verified = client.post(
            "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=admin
        )
        assert verified.status_code == 200, verified.text
        assert verified.json()["principal"] == "User:alice"
        assert verified.json()["expiryTimestamp"] == renewed.json()["expiryTimestamp"]

        expired = client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=alice)
        assert expired.status_code == 200, expired.text
        assert client.get(f"/v1/tokens/{token['tokenId']}", headers=alice).status_code == 404
        assert backend.token_store.get(token["tokenId"]) is None

        wrong = {"Authorization": "Basic " + base64.b64encode(b"alice:wrong").decode()}
        assert client.post("/v1/tokens", json={}, headers=wrong).status_code == 401  # checked against stored keys


def test_the_replica_is_ready_on_the_memory_backend(tmp_path: Path) -> None:
    with memory_client(memory_settings(tmp_path)) as (client, backend):
        admin = add_user(backend, "admin", "admin-secret")

        ready = client.get("/readyz")
        assert ready.status_code == 200, ready.text
        status = client.get("/v1/cluster/status", headers=admin)
        assert status.status_code == 200, status.text
        assert status.json()["backend"] == "memory"
