"""GET /v1/tokens and /v1/tokens/{id}: Kafka's describe filter and visibility, pagination, no HMACs."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.backends import Cluster, User
from tests.api.conftest import bearer


def _create(client: TestClient, user: User, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/tokens", json=body, headers=user.basic)
    assert response.status_code == 201
    return response.json()


def _ids(response: Any) -> set[str]:
    assert response.status_code == 200
    return {token["tokenId"] for token in response.json()["tokens"]}


@pytest.fixture
def tokens(client: TestClient, admin: User, alice: User, bob: User, carol: User) -> dict[str, dict[str, Any]]:
    return {
        "alice": _create(client, alice),
        "alice_bob_renews": _create(client, alice, renewers=[bob.principal]),
        "bob": _create(client, bob),
        "admin_for_carol": _create(client, admin, owner=carol.principal),
    }


def test_each_caller_sees_what_it_owns_renews_or_requested(
    client: TestClient, tokens: dict[str, dict[str, Any]], admin: User, alice: User, bob: User, carol: User
) -> None:
    ids = {name: token["tokenId"] for name, token in tokens.items()}
    assert _ids(client.get("/v1/tokens", headers=alice.basic)) == {ids["alice"], ids["alice_bob_renews"]}
    assert _ids(client.get("/v1/tokens", headers=bob.basic)) == {ids["bob"], ids["alice_bob_renews"]}
    assert _ids(client.get("/v1/tokens", headers=carol.basic)) == {ids["admin_for_carol"]}
    # a super user sees every token of the cluster: on the session's shared broker, other tests' too
    assert _ids(client.get("/v1/tokens", headers=admin.basic)) >= set(ids.values())


def test_stranger_sees_nothing(client: TestClient, kts: Cluster, tokens: dict[str, dict[str, Any]]) -> None:
    dave = kts.user("dave")
    assert _ids(client.get("/v1/tokens", headers=dave.basic)) == set()
    for token in tokens.values():
        response = client.get(f"/v1/tokens/{token['tokenId']}", headers=dave.basic)
        assert response.status_code == 404
        assert response.json()["code"] == 62


def test_owner_filter_matches_owner_renewer_or_requester(
    client: TestClient, tokens: dict[str, dict[str, Any]], admin: User, alice: User, bob: User, carol: User
) -> None:
    ids = {name: token["tokenId"] for name, token in tokens.items()}
    by_bob = _ids(client.get("/v1/tokens", params={"owner": bob.principal}, headers=admin.basic))
    assert by_bob == {ids["bob"], ids["alice_bob_renews"]}
    by_admin = _ids(client.get("/v1/tokens", params={"owner": admin.principal}, headers=admin.basic))
    assert by_admin & set(ids.values()) == {ids["admin_for_carol"]}  # the shared broker's admin requests others too
    both = _ids(client.get("/v1/tokens", params={"owner": [carol.principal, alice.principal]}, headers=admin.basic))
    assert both == {ids["alice"], ids["alice_bob_renews"], ids["admin_for_carol"]}
    assert _ids(client.get("/v1/tokens?owner=User:nobody", headers=admin.basic)) == set()


def test_filter_never_widens_visibility(
    client: TestClient, tokens: dict[str, dict[str, Any]], alice: User, bob: User
) -> None:
    assert _ids(client.get("/v1/tokens", params={"owner": bob.principal}, headers=alice.basic)) == {
        tokens["alice_bob_renews"]["tokenId"]
    }


def test_describe_output_never_holds_an_hmac(
    client: TestClient, tokens: dict[str, dict[str, Any]], admin: User, alice: User
) -> None:
    listing = client.get("/v1/tokens", headers=admin.basic)
    single = client.get(f"/v1/tokens/{tokens['alice']['tokenId']}", headers=alice.basic)
    for token in tokens.values():
        assert token["hmac"] not in listing.text
        assert token["hmac"] not in single.text
    assert all("hmac" not in item for item in listing.json()["tokens"])
    assert set(single.json()) == {
        "tokenId",
        "owner",
        "tokenRequester",
        "renewers",
        "issueTimestamp",
        "expiryTimestamp",
        "maxTimestamp",
        "expired",
    }


def test_token_authenticated_callers_may_describe(client: TestClient, tokens: dict[str, dict[str, Any]]) -> None:
    token = tokens["alice"]
    assert token["tokenId"] in _ids(client.get("/v1/tokens", headers=bearer(token)))
    assert client.get(f"/v1/tokens/{token['tokenId']}", headers=bearer(token)).status_code == 200


def test_pagination_walks_every_token_once_in_id_order(client: TestClient, alice: User) -> None:
    created = {_create(client, alice)["tokenId"] for _ in range(7)}
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = "limit=3" + (f"&cursor={cursor}" if cursor else "")
        body = client.get(f"/v1/tokens?{query}", headers=alice.basic).json()
        seen += [token["tokenId"] for token in body["tokens"]]
        pages += 1
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == sorted(created)


def test_pagination_is_stable_when_tokens_disappear(client: TestClient, alice: User) -> None:
    tokens = sorted((_create(client, alice) for _ in range(4)), key=lambda t: t["tokenId"])
    first = client.get("/v1/tokens?limit=2", headers=alice.basic).json()
    assert [t["tokenId"] for t in first["tokens"]] == [tokens[0]["tokenId"], tokens[1]["tokenId"]]
    client.post("/v1/tokens/expire", json={"hmac": tokens[1]["hmac"]}, headers=alice.basic)
    rest = client.get(f"/v1/tokens?limit=2&cursor={first['nextCursor']}", headers=alice.basic).json()
    assert [t["tokenId"] for t in rest["tokens"]] == [tokens[2]["tokenId"], tokens[3]["tokenId"]]
    assert rest["nextCursor"] is None


def _walk(client: TestClient, user: User, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        query = f"limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        body = client.get(f"/v1/tokens?{query}", headers=user.basic).json()
        assert len(body["tokens"]) <= limit
        seen += [token["tokenId"] for token in body["tokens"]]
        cursor = body["nextCursor"]
        if cursor is None:
            return seen
        assert len(body["tokens"]) == limit  # a cursor only after a full page


@pytest.mark.only_on("zookeeper", "a super user's listing is the whole cluster's: the session's broker holds others'")
def test_every_callers_listing_walks_exactly_what_it_may_see_in_id_order(
    client: TestClient, kts: Cluster, admin: User, alice: User, bob: User, carol: User
) -> None:
    """Whichever index answers (the ordered one for super users and callers with describe grants, the
    principal ones for the rest), a listing is the tokens the caller may see one by one, in id order."""
    dave = kts.user("dave")
    grant = {
        "resourceType": "User",
        "resourceName": "User:b",
        "patternType": "PREFIXED",
        "principal": dave.principal,
        "host": "*",
        "operation": "DescribeTokens",
        "permissionType": "Allow",
    }
    assert client.post("/v1/acls", json=grant, headers=admin.basic).status_code == 201
    made = [_create(client, alice) for _ in range(3)]
    made += [_create(client, bob), _create(client, bob, renewers=[carol.principal])]
    made.append(_create(client, admin, owner=carol.principal))
    for user in (admin, alice, bob, carol, dave):
        may_see = sorted(
            token["tokenId"]
            for token in made
            if client.get(f"/v1/tokens/{token['tokenId']}", headers=user.basic).status_code == 200
        )
        assert may_see  # every caller sees something: each walk is a real check
        for limit in (1, 2, 100):
            assert _walk(client, user, limit) == may_see, (user.name, limit)
    assert len(_walk(client, dave, 1)) == 2  # bob's two tokens, through the prefixed grant


@pytest.mark.only_on("zookeeper", "a super user's pages are the whole cluster's: the session's broker holds others'")
def test_a_super_users_pages_are_stable_as_tokens_come_and_go(client: TestClient, admin: User, alice: User) -> None:
    tokens = sorted((_create(client, alice) for _ in range(5)), key=lambda t: t["tokenId"])
    first = client.get("/v1/tokens?limit=2", headers=admin.basic).json()
    assert [t["tokenId"] for t in first["tokens"]] == [tokens[0]["tokenId"], tokens[1]["tokenId"]]
    assert first["nextCursor"] is not None
    client.post("/v1/tokens/expire", json={"hmac": tokens[2]["hmac"]}, headers=alice.basic)
    rest = client.get(f"/v1/tokens?limit=2&cursor={first['nextCursor']}", headers=admin.basic).json()
    assert [t["tokenId"] for t in rest["tokens"]] == [tokens[3]["tokenId"], tokens[4]["tokenId"]]
    assert rest["nextCursor"] is None  # nothing visible after the page: no cursor
