"""KIP-373 end to end: a trusted service gets tokens for the users it runs jobs for, and only for them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.conftest import ADMIN, basic, bearer, put_user

pytestmark = pytest.mark.only_on("zookeeper", "puts the service's users and grants as znodes behind kts's back")

NIMBUS = ("nimbus", "nimbus-pw")


def _acl(
    operation: str, permission: str = "Allow", name: str = "User:joe", principal: str = "User:nimbus"
) -> dict[str, Any]:
    return {
        "resourceType": "User",
        "resourceName": name,
        "patternType": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permissionType": permission,
    }


def test_orchestrator_story(client: TestClient, raw_zk: KazooClient) -> None:
    put_user(raw_zk, *NIMBUS)

    refused = client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS))
    assert refused.status_code == 403
    assert refused.json()["code"] == 65

    granted = client.post("/v1/acls", json=_acl("CreateTokens"), headers=basic(ADMIN))
    assert granted.status_code == 201
    assert raw_zk.exists("/kafka-acl/User/User:joe")

    created = client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS))
    assert created.status_code == 201
    token = created.json()
    assert (token["owner"], token["tokenRequester"]) == ("User:joe", "User:nimbus")
    doc = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")[0])
    assert doc["version"] == 3
    assert (doc["owner"], doc["tokenRequester"]) == ("User%3Ajoe", "User%3Animbus")

    who = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=bearer(token)
    )
    assert who.json()["principal"] == "User:joe"
    as_joe = client.get("/v1/tokens", headers=bearer(token))
    assert as_joe.status_code == 200
    assert [t["tokenId"] for t in as_joe.json()["tokens"]] == [token["tokenId"]]  # joe owns it

    # nimbus, the requester, may describe the token it asked for
    assert client.get(f"/v1/tokens/{token['tokenId']}", headers=basic(NIMBUS)).status_code == 200

    assert client.post("/v1/acls", json=_acl("CreateTokens", "Deny"), headers=basic(ADMIN)).status_code == 201
    denied = client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS))
    assert denied.status_code == 403
    assert denied.json()["code"] == 65

    other = client.post("/v1/tokens", json={"owner": "User:mary"}, headers=basic(NIMBUS))
    assert other.status_code == 403
    assert other.json()["code"] == 65


def test_prefixed_and_wildcard_grants(client: TestClient, raw_zk: KazooClient) -> None:
    put_user(raw_zk, *NIMBUS)
    prefixed = _acl("CreateTokens", name="User:etl-") | {"patternType": "PREFIXED"}
    assert client.post("/v1/acls", json=prefixed, headers=basic(ADMIN)).status_code == 201
    assert client.post("/v1/tokens", json={"owner": "User:etl-daily"}, headers=basic(NIMBUS)).status_code == 201
    assert client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS)).status_code == 403
    assert client.post("/v1/acls", json=_acl("All", name="*"), headers=basic(ADMIN)).status_code == 201
    assert client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS)).status_code == 201


def test_token_authenticated_service_still_cannot_create(client: TestClient, raw_zk: KazooClient) -> None:
    put_user(raw_zk, *NIMBUS)
    client.post("/v1/acls", json=_acl("CreateTokens"), headers=basic(ADMIN))
    own = client.post("/v1/tokens", json={}, headers=basic(NIMBUS)).json()
    response = client.post("/v1/tokens", json={"owner": "User:joe"}, headers=bearer(own))
    assert response.status_code == 403
    assert response.json()["code"] == 64


def test_host_based_acls_use_the_client_address(client: TestClient, raw_zk: KazooClient) -> None:
    put_user(raw_zk, *NIMBUS)
    # Starlette's TestClient connects from the host "testclient"; an ACL for another address does not apply
    client.post("/v1/acls", json=_acl("CreateTokens") | {"host": "192.0.2.10"}, headers=basic(ADMIN))
    assert client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS)).status_code == 403


def test_a_grant_over_a_super_user_is_added_with_warnings_but_mints_no_token_for_it(
    client: TestClient, raw_zk: KazooClient
) -> None:
    put_user(raw_zk, *NIMBUS)
    everyone = _acl("CreateTokens") | {"resourceName": "User:", "patternType": "PREFIXED"}
    added = client.post("/v1/acls", json=everyone, headers=basic(ADMIN))
    assert added.status_code == 201
    (warning,) = added.json()["warnings"]
    assert warning.startswith("This ACL lets User:nimbus create delegation tokens for the super user User:admin,")
    assert {key: value for key, value in added.json().items() if key != "warnings"} == everyone

    refused = client.post("/v1/tokens", json={"owner": "User:admin"}, headers=basic(NIMBUS))
    assert refused.status_code == 403
    assert refused.json()["code"] == 65
    assert refused.json()["message"] == (
        "User:nimbus may not create tokens for User:admin: only super users may create tokens for a super user."
    )
    assert raw_zk.get_children(TokenZNode.ROOT) == []
    # the same grant still works for everyone else, and the super user still gets its own tokens
    assert client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS)).status_code == 201
    assert client.post("/v1/tokens", json={}, headers=basic(ADMIN)).status_code == 201


def test_grants_that_do_not_cover_a_super_user_carry_no_warnings(client: TestClient) -> None:
    for acl in (_acl("CreateTokens"), _acl("CreateTokens", "Deny", name="*"), _acl("DescribeTokens", name="*")):
        added = client.post("/v1/acls", json=acl, headers=basic(ADMIN))
        assert added.status_code == 201
        assert added.json() == acl


def test_tokens_for_super_users_can_be_allowed(make_client: Any, raw_zk: KazooClient, client: TestClient) -> None:
    put_user(raw_zk, *NIMBUS)
    lenient = make_client(token_create_for_super_users=True)
    added = lenient.post("/v1/acls", json=_acl("All", name="User:admin"), headers=basic(ADMIN))
    assert "token.create.for.super.users=true" in added.json()["warnings"][0]
    created = lenient.post("/v1/tokens", json={"owner": "User:admin"}, headers=basic(NIMBUS))
    assert created.status_code == 201
    assert (created.json()["owner"], created.json()["tokenRequester"]) == ("User:admin", "User:nimbus")
