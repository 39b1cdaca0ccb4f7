"""POST /v1/tokens/verify and Bearer authentication: never for unknown, wrong or expired tokens."""

from __future__ import annotations

import base64
import time
from typing import Any

from fastapi.testclient import TestClient

from tests.api.backends import User
from tests.api.conftest import bearer


def _create(client: TestClient, owner: User, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/tokens", json=body, headers=owner.basic)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_verify_names_the_owner_and_requester(client: TestClient, alice: User, bob: User) -> None:
    token = _create(client, alice)
    response = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bob.basic
    )
    assert response.status_code == 200
    assert response.json() == {
        "principal": alice.principal,
        "tokenRequester": alice.principal,
        "expiryTimestamp": token["expiryTimestamp"],
    }


def test_token_authenticated_caller_may_verify(client: TestClient, alice: User) -> None:
    token = _create(client, alice)
    response = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bearer(token)
    )
    assert response.status_code == 200


def test_wrong_hmac_does_not_verify_or_authenticate(client: TestClient, alice: User, bob: User) -> None:
    token = _create(client, alice)
    other = _create(client, alice)
    mac = bytearray(base64.b64decode(token["hmac"]))
    mac[0] ^= 1
    flipped = base64.b64encode(bytes(mac)).decode()
    for wrong in (flipped, other["hmac"]):
        response = client.post(
            "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": wrong}, headers=bob.basic
        )
        assert response.status_code == 401
        assert wrong not in response.text
        assert client.get("/v1/tokens", headers=bearer({"tokenId": token["tokenId"], "hmac": wrong})).status_code == 401


def test_unknown_token_does_not_verify(client: TestClient, alice: User, bob: User) -> None:
    token = _create(client, alice)
    response = client.post(
        "/v1/tokens/verify", json={"tokenId": "E8gTWaIxRUOaSRH7wY3N1w", "hmac": token["hmac"]}, headers=bob.basic
    )
    assert response.status_code == 401


def test_expired_token_never_authenticates_even_before_any_sweep(client: TestClient, alice: User, bob: User) -> None:
    # Long enough for the first login to come before the end on a loaded machine; the sweep runs hourly.
    token = _create(client, alice, maxLifetimeMs=3_000)
    assert client.get("/v1/tokens", headers=bearer(token)).status_code == 200
    while time.time() * 1000 < token["maxTimestamp"]:
        time.sleep(0.005)
    assert client.get("/v1/tokens", headers=bearer(token)).status_code == 401
    response = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bob.basic
    )
    assert response.status_code == 401


def test_expired_by_request_token_stops_authenticating(client: TestClient, alice: User) -> None:
    token = _create(client, alice)
    client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=alice.basic)
    assert client.get("/v1/tokens", headers=bearer(token)).status_code == 401


def test_verify_needs_an_authenticated_caller(client: TestClient, alice: User) -> None:
    token = _create(client, alice)
    response = client.post("/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]})
    assert response.status_code == 401
