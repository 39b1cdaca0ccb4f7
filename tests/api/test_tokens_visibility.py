"""Kafka's describe visibility matrix, on a token owned by joe, requested by nimbus, renewable by bob."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from tests.api.conftest import ADMIN, basic, put_user

PASSWORDS = {name: f"{name}-pw" for name in ("joe", "nimbus", "bob", "tokreader", "joewatcher", "stranger")}


def _grant(client: TestClient, **acl: str) -> None:
    body = {"patternType": "LITERAL", "host": "*", "permissionType": "Allow"} | acl
    assert client.post("/v1/acls", json=body, headers=basic(ADMIN)).status_code == 201


@pytest.fixture
def token(client: TestClient, raw_zk: KazooClient) -> dict[str, Any]:
    for name, password in PASSWORDS.items():
        if name != "bob":  # the client fixture made bob already
            put_user(raw_zk, name, password)
    _grant(client, resourceType="User", resourceName="User:joe", principal="User:nimbus", operation="CreateTokens")
    created = client.post(
        "/v1/tokens", json={"owner": "User:joe", "renewers": ["User:bob"]}, headers=basic(("nimbus", "nimbus-pw"))
    )
    assert created.status_code == 201
    token: dict[str, Any] = created.json()
    _grant(
        client,
        resourceType="DelegationToken",
        resourceName=token["tokenId"],
        principal="User:tokreader",
        operation="Describe",
    )
    _grant(
        client, resourceType="User", resourceName="User:joe", principal="User:joewatcher", operation="DescribeTokens"
    )
    return token


@pytest.mark.parametrize(
    ("who", "sees"),
    [
        ("joe", True),  # owner
        ("nimbus", True),  # requester
        ("bob", True),  # renewer
        ("tokreader", True),  # Describe on DelegationToken:<id>
        ("joewatcher", True),  # DescribeTokens on User:User:joe
        ("stranger", False),
        ("admin", True),  # super user
    ],
)
def test_visibility(client: TestClient, token: dict[str, Any], who: str, sees: bool) -> None:
    credentials = ("admin", "admin-secret") if who == "admin" else (who, PASSWORDS[who])
    listing = client.get("/v1/tokens", headers=basic(credentials))
    single = client.get(f"/v1/tokens/{token['tokenId']}", headers=basic(credentials))
    assert (token["tokenId"] in {t["tokenId"] for t in listing.json()["tokens"]}) is sees
    assert single.status_code == (200 if sees else 404)


def test_deny_overrides_a_describe_grant(client: TestClient, token: dict[str, Any]) -> None:
    _grant(
        client,
        resourceType="User",
        resourceName="User:joe",
        principal="User:joewatcher",
        operation="DescribeTokens",
        permissionType="Deny",
    )
    listing = client.get("/v1/tokens", headers=basic(("joewatcher", "joewatcher-pw")))
    assert listing.json()["tokens"] == []


def test_describe_grants_do_not_allow_renewing(client: TestClient, token: dict[str, Any]) -> None:
    for who in ("tokreader", "joewatcher", "nimbus"):
        response = client.post(f"/v1/tokens/{token['tokenId']}/renew", json={}, headers=basic((who, PASSWORDS[who])))
        assert response.status_code == 403
        assert response.json()["code"] == 63
