"""KIP-373 end to end: a trusted service gets tokens for the users it runs jobs for, and only for them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.backends import Cluster, User
from tests.api.conftest import bearer


@pytest.fixture
def nimbus(kts: Cluster) -> User:
    """The trusted service, a user of the test's own; the users it runs jobs for are named after it (``joe``)."""
    return kts.user("nimbus")


@pytest.fixture
def joe(nimbus: User) -> str:
    return f"User:joe-{nimbus.name}"


def _acl(operation: str, nimbus: User, name: str, permission: str = "Allow") -> dict[str, Any]:
    return {
        "resourceType": "User",
        "resourceName": name,
        "patternType": "LITERAL",
        "principal": nimbus.principal,
        "host": "*",
        "operation": operation,
        "permissionType": permission,
    }


@pytest.mark.only_on("zookeeper", "asserts the ACL and token znodes a KIP-373 grant and create write")
def test_orchestrator_story(client: TestClient, raw_zk: KazooClient, admin: User, nimbus: User, joe: str) -> None:
    refused = client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic)
    assert refused.status_code == 403
    assert refused.json()["code"] == 65

    granted = client.post("/v1/acls", json=_acl("CreateTokens", nimbus, joe), headers=admin.basic)
    assert granted.status_code == 201
    assert raw_zk.exists(f"/kafka-acl/User/{joe}")

    created = client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic)
    assert created.status_code == 201
    token = created.json()
    assert (token["owner"], token["tokenRequester"]) == (joe, nimbus.principal)
    doc = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")[0])
    assert doc["version"] == 3
    assert (doc["owner"], doc["tokenRequester"]) == (joe.replace(":", "%3A"), f"User%3A{nimbus.name}")

    who = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bearer(token)
    )
    assert who.json()["principal"] == joe
    as_joe = client.get("/v1/tokens", headers=bearer(token))
    assert as_joe.status_code == 200
    assert [t["tokenId"] for t in as_joe.json()["tokens"]] == [token["tokenId"]]  # joe owns it

    # nimbus, the requester, may describe the token it asked for
    assert client.get(f"/v1/tokens/{token['tokenId']}", headers=nimbus.basic).status_code == 200

    assert (
        client.post("/v1/acls", json=_acl("CreateTokens", nimbus, joe, "Deny"), headers=admin.basic).status_code == 201
    )
    denied = client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic)
    assert denied.status_code == 403
    assert denied.json()["code"] == 65

    other = client.post("/v1/tokens", json={"owner": f"User:mary-{nimbus.name}"}, headers=nimbus.basic)
    assert other.status_code == 403
    assert other.json()["code"] == 65


def test_prefixed_and_wildcard_grants(client: TestClient, admin: User, nimbus: User, joe: str) -> None:
    etl = f"User:etl-{nimbus.name}-"
    prefixed = _acl("CreateTokens", nimbus, etl) | {"patternType": "PREFIXED"}
    assert client.post("/v1/acls", json=prefixed, headers=admin.basic).status_code == 201
    assert client.post("/v1/tokens", json={"owner": f"{etl}daily"}, headers=nimbus.basic).status_code == 201
    assert client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic).status_code == 403
    assert client.post("/v1/acls", json=_acl("All", nimbus, "*"), headers=admin.basic).status_code == 201
    assert client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic).status_code == 201


def test_token_authenticated_service_still_cannot_create(
    client: TestClient, admin: User, nimbus: User, joe: str
) -> None:
    client.post("/v1/acls", json=_acl("CreateTokens", nimbus, joe), headers=admin.basic)
    own = client.post("/v1/tokens", json={}, headers=nimbus.basic).json()
    response = client.post("/v1/tokens", json={"owner": joe}, headers=bearer(own))
    assert response.status_code == 403
    assert response.json()["code"] == 64


def test_host_based_acls_use_the_client_address(client: TestClient, admin: User, nimbus: User, joe: str) -> None:
    # Starlette's TestClient connects from the host "testclient"; an ACL for another address does not apply
    client.post("/v1/acls", json=_acl("CreateTokens", nimbus, joe) | {"host": "192.0.2.10"}, headers=admin.basic)
    assert client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic).status_code == 403


def test_a_grant_over_a_super_user_is_added_with_warnings_but_mints_no_token_for_it(
    client: TestClient, admin: User, nimbus: User, joe: str
) -> None:
    everyone = _acl("CreateTokens", nimbus, "User:") | {"patternType": "PREFIXED"}
    added = client.post("/v1/acls", json=everyone, headers=admin.basic)
    assert added.status_code == 201
    (warning,) = added.json()["warnings"]
    assert warning.startswith(
        f"This ACL lets {nimbus.principal} create delegation tokens for the super user {admin.principal},"
    )
    assert {key: value for key, value in added.json().items() if key != "warnings"} == everyone

    refused = client.post("/v1/tokens", json={"owner": admin.principal}, headers=nimbus.basic)
    assert refused.status_code == 403
    assert refused.json()["code"] == 65
    assert refused.json()["message"] == (
        f"{nimbus.principal} may not create tokens for {admin.principal}: only super users may create tokens for a"
        " super user."
    )
    assert client.get("/v1/tokens", headers=nimbus.basic).json()["tokens"] == []  # a requester sees what it got
    # the same grant still works for everyone else, and the super user still gets its own tokens
    assert client.post("/v1/tokens", json={"owner": joe}, headers=nimbus.basic).status_code == 201
    assert client.post("/v1/tokens", json={}, headers=admin.basic).status_code == 201


def test_grants_that_do_not_cover_a_super_user_carry_no_warnings(
    client: TestClient, admin: User, nimbus: User, joe: str
) -> None:
    grants = (
        _acl("CreateTokens", nimbus, joe),
        _acl("CreateTokens", nimbus, "*", "Deny"),
        _acl("DescribeTokens", nimbus, "*"),
    )
    for acl in grants:
        added = client.post("/v1/acls", json=acl, headers=admin.basic)
        assert added.status_code == 201
        assert added.json() == acl


def test_tokens_for_super_users_can_be_allowed(make_client: Any, admin: User, nimbus: User) -> None:
    lenient = make_client(token_create_for_super_users=True)
    added = lenient.post("/v1/acls", json=_acl("All", nimbus, admin.principal), headers=admin.basic)
    assert "token.create.for.super.users=true" in added.json()["warnings"][0]
    created = lenient.post("/v1/tokens", json={"owner": admin.principal}, headers=nimbus.basic)
    assert created.status_code == 201
    assert (created.json()["owner"], created.json()["tokenRequester"]) == (admin.principal, nimbus.principal)
