"""Kafka's describe visibility matrix, on a token owned by joe, requested by nimbus, renewable by bob."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.backends import Cluster, User

NAMES = ("joe", "nimbus", "bob", "tokreader", "joewatcher", "stranger")


@pytest.fixture
def users(kts: Cluster) -> dict[str, User]:
    """The test's own users, by role (the session's broker is shared), and the super user."""
    return {name: kts.user(name) for name in NAMES} | {"admin": kts.admin}


@pytest.fixture
def grant(client: TestClient, kts: Cluster) -> Callable[..., None]:
    def grant(**acl: str) -> None:
        body = {"patternType": "LITERAL", "host": "*", "permissionType": "Allow"} | acl
        assert client.post("/v1/acls", json=body, headers=kts.admin.basic).status_code == 201

    return grant


@pytest.fixture
def token(client: TestClient, users: dict[str, User], grant: Callable[..., None]) -> dict[str, Any]:
    joe, nimbus = users["joe"].principal, users["nimbus"]
    grant(resourceType="User", resourceName=joe, principal=nimbus.principal, operation="CreateTokens")
    created = client.post("/v1/tokens", json={"owner": joe, "renewers": [users["bob"].principal]}, headers=nimbus.basic)
    assert created.status_code == 201
    token: dict[str, Any] = created.json()
    grant(
        resourceType="DelegationToken",
        resourceName=token["tokenId"],
        principal=users["tokreader"].principal,
        operation="Describe",
    )
    grant(resourceType="User", resourceName=joe, principal=users["joewatcher"].principal, operation="DescribeTokens")
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
def test_visibility(client: TestClient, users: dict[str, User], token: dict[str, Any], who: str, sees: bool) -> None:
    listing = client.get("/v1/tokens", headers=users[who].basic)
    single = client.get(f"/v1/tokens/{token['tokenId']}", headers=users[who].basic)
    assert (token["tokenId"] in {t["tokenId"] for t in listing.json()["tokens"]}) is sees
    assert single.status_code == (200 if sees else 404)


def test_deny_overrides_a_describe_grant(
    client: TestClient, users: dict[str, User], grant: Callable[..., None], token: dict[str, Any]
) -> None:
    grant(
        resourceType="User",
        resourceName=users["joe"].principal,
        principal=users["joewatcher"].principal,
        operation="DescribeTokens",
        permissionType="Deny",
    )
    listing = client.get("/v1/tokens", headers=users["joewatcher"].basic)
    assert listing.json()["tokens"] == []


def test_describe_grants_do_not_allow_renewing(
    client: TestClient, users: dict[str, User], token: dict[str, Any]
) -> None:
    for who in ("tokreader", "joewatcher", "nimbus"):
        response = client.post(f"/v1/tokens/{token['tokenId']}/renew", json={}, headers=users[who].basic)
        assert response.status_code == 403
        assert response.json()["code"] == 63
