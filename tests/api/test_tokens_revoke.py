"""POST /v1/tokens/revoke: every token of an owner and/or a requester expired at once, each with its
notification as a single expire writes it, in one ZooKeeper transaction per batch, audited per token and
once as a whole; for super users and Alter on the cluster only; a token expired meanwhile is skipped."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk import admission as zk_admission_module
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests.api.conftest import ADMIN, ALICE, BOB, CAROL, basic, bearer
from tests.api.helpers import token_state

pytestmark = pytest.mark.only_on("zookeeper", "asserts one ZooKeeper transaction per batch and its notifications")

Token = dict[str, Any]


def _create(client: TestClient, user: tuple[str, str], owner: str | None = None) -> Token:
    response = client.post("/v1/tokens", json={} if owner is None else {"owner": owner}, headers=basic(user))
    assert response.status_code == 201, response.text
    token: Token = response.json()
    return token


@pytest.fixture
def tokens(client: TestClient) -> dict[str, Token]:
    """alice's own two, one admin made for alice, one admin made for bob, and bob's own."""
    return {
        "alice1": _create(client, ALICE),
        "alice2": _create(client, ALICE),
        "alice_by_admin": _create(client, ADMIN, "User:alice"),
        "bob_by_admin": _create(client, ADMIN, "User:bob"),
        "bob": _create(client, BOB),
    }


def _revoke(client: TestClient, body: dict[str, Any], user: tuple[str, str] = ADMIN) -> list[str]:
    response = client.post("/v1/tokens/revoke", json=body, headers=basic(user))
    assert response.status_code == 200, response.text
    revoked: list[str] = response.json()["revoked"]
    return revoked


def _ids(tokens: dict[str, Token], *names: str) -> set[str]:
    return {tokens[name]["tokenId"] for name in names}


def _remaining(raw_zk: KazooClient) -> set[str]:
    return set(raw_zk.get_children(TokenZNode.ROOT))


def test_revoke_by_owner(client: TestClient, raw_zk: KazooClient, tokens: dict[str, Token]) -> None:
    revoked = _revoke(client, {"owner": "User:alice"})
    assert set(revoked) == _ids(tokens, "alice1", "alice2", "alice_by_admin")
    assert len(revoked) == 3
    assert _remaining(raw_zk) == _ids(tokens, "bob_by_admin", "bob")
    listed = client.get("/v1/tokens", headers=basic(ADMIN)).json()["tokens"]
    assert {token["tokenId"] for token in listed} == _ids(tokens, "bob_by_admin", "bob")


def test_revoke_by_requester(client: TestClient, raw_zk: KazooClient, tokens: dict[str, Token]) -> None:
    assert set(_revoke(client, {"tokenRequester": "User:admin"})) == _ids(tokens, "alice_by_admin", "bob_by_admin")
    assert _remaining(raw_zk) == _ids(tokens, "alice1", "alice2", "bob")


def test_revoke_by_owner_and_requester_takes_tokens_matching_both(
    client: TestClient, raw_zk: KazooClient, tokens: dict[str, Token]
) -> None:
    assert set(_revoke(client, {"owner": "User:alice", "tokenRequester": "User:admin"})) == _ids(
        tokens, "alice_by_admin"
    )
    assert _remaining(raw_zk) == _ids(tokens, "alice1", "alice2", "bob_by_admin", "bob")
    assert _revoke(client, {"owner": "User:alice", "tokenRequester": "User:admin"}) == []  # idempotent


@pytest.mark.parametrize(
    "body",
    [{}, None, {"owner": None}, {"owner": "alice"}, {"owner": "User:alice", "renewer": "User:bob"}],
    ids=["empty", "no-body", "null-owner", "not-a-principal", "unknown-field"],
)
def test_a_revoke_naming_no_tokens_or_malformed_is_refused(
    client: TestClient, raw_zk: KazooClient, tokens: dict[str, Token], body: dict[str, Any] | None
) -> None:
    before = token_state(raw_zk)
    if body is None:
        response = client.post("/v1/tokens/revoke", headers=basic(ADMIN) | {"Content-Type": "application/json"})
    else:
        response = client.post("/v1/tokens/revoke", json=body, headers=basic(ADMIN))
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "INVALID_REQUEST"
    assert token_state(raw_zk) == before


def test_only_super_users_and_alter_on_the_cluster_may_revoke(
    client: TestClient, raw_zk: KazooClient, tokens: dict[str, Token]
) -> None:
    before = token_state(raw_zk)
    refused = client.post("/v1/tokens/revoke", json={"owner": "User:alice"}, headers=basic(ALICE))
    assert refused.status_code == 403
    assert refused.json()["code"] == 31
    assert refused.json()["message"] == (
        "User:alice may not revoke tokens in bulk (needs Alter on Cluster:kafka-cluster)."
    )
    # a token-authenticated caller is refused as for create, renew and expire, even a super user's token
    admin_token = _create(client, ADMIN)
    before = token_state(raw_zk)
    as_token = client.post("/v1/tokens/revoke", json={"owner": "User:alice"}, headers=bearer(admin_token))
    assert as_token.status_code == 403
    assert as_token.json()["code"] == 64
    assert token_state(raw_zk) == before

    describe_only = {
        "resourceType": "Cluster",
        "resourceName": "kafka-cluster",
        "patternType": "LITERAL",
        "principal": "User:carol",
        "host": "*",
        "operation": "Describe",
        "permissionType": "Allow",
    }
    assert client.post("/v1/acls", json=describe_only, headers=basic(ADMIN)).status_code == 201
    assert client.post("/v1/tokens/revoke", json={"owner": "User:bob"}, headers=basic(CAROL)).status_code == 403
    assert token_state(raw_zk) == before

    alter = describe_only | {"operation": "Alter"}
    assert client.post("/v1/acls", json=alter, headers=basic(ADMIN)).status_code == 201
    assert set(_revoke(client, {"owner": "User:bob"}, CAROL)) == _ids(tokens, "bob_by_admin", "bob")
    assert set(_revoke(client, {"owner": "User:alice"}, ADMIN)) == _ids(tokens, "alice1", "alice2", "alice_by_admin")


def test_each_token_is_deleted_with_a_notification_as_a_single_expire_writes_it(
    client: TestClient, raw_zk: KazooClient, tokens: dict[str, Token]
) -> None:
    single = client.post(f"/v1/tokens/{tokens['alice1']['tokenId']}/expire", json={}, headers=basic(ALICE))
    assert single.status_code == 200
    names_before = set(raw_zk.get_children(TokenChangeZNode.ROOT))
    single_name = max(names_before)
    assert raw_zk.get(f"{TokenChangeZNode.ROOT}/{single_name}")[0] == tokens["alice1"]["tokenId"].encode()

    revoked = _revoke(client, {"owner": "User:alice"})

    new = sorted(set(raw_zk.get_children(TokenChangeZNode.ROOT)) - names_before)
    # brokers' format: token_change_<10-digit sequence>, holding the raw UTF-8 tokenId (not JSON), one each
    assert all(re.fullmatch(r"token_change_\d{10}", name) for name in new)
    data = [raw_zk.get(f"{TokenChangeZNode.ROOT}/{name}")[0] for name in new]
    assert sorted(data) == sorted(token_id.encode("utf-8") for token_id in revoked)
    assert set(revoked) == _ids(tokens, "alice2", "alice_by_admin")
    for token_id in revoked:
        assert raw_zk.exists(f"{TokenZNode.ROOT}/{token_id}") is None
    assert not raw_zk.get_children("/kts/audit-intents")  # every intent marker settled and cleared


def _events(client: TestClient) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get("/v1/audit?limit=1000", headers=basic(ADMIN)).json()["events"]
    return list(reversed(events))


def test_one_audit_event_per_token_and_one_summary(client: TestClient, tokens: dict[str, Token]) -> None:
    last = max(event["id"] for event in _events(client))
    response = client.post(
        "/v1/tokens/revoke", json={"owner": "User:alice"}, headers=basic(ADMIN) | {"X-Request-ID": "revoke-1"}
    )
    revoked = set(response.json()["revoked"])
    events = [event for event in _events(client) if event["id"] > last and event["action"] != "token.describe"]

    per_token = [event for event in events if event["action"] == "token.expire"]
    assert {event["tokenId"] for event in per_token} == revoked
    assert len(per_token) == 3
    for event in per_token:
        assert event["outcome"] == "succeeded"
        assert event["principal"] == "User:admin"
        assert event["owner"] == "User:alice"
        assert event["requestId"] == "revoke-1"
        assert event["details"] == {"expiryTimePeriodMs": -1, "reason": "request", "deleted": True}
    assert {event["tokenRequester"] for event in per_token} == {"User:alice", "User:admin"}

    (summary,) = [event for event in events if event["action"] == "token.revoke"]
    assert (summary["outcome"], summary["principal"], summary["owner"], summary["tokenRequester"]) == (
        "succeeded",
        "User:admin",
        "User:alice",
        None,
    )
    assert summary["details"] == {"reason": "request", "revoked": 3}
    assert summary["tokenId"] is None
    assert len(events) == 4

    client.post("/v1/tokens/revoke", json={"owner": "User:bob"}, headers=basic(ALICE))
    (denied,) = [event for event in _events(client) if event["action"] == "token.revoke" and event["id"] > last][1:]
    assert (denied["outcome"], denied["errorCode"], denied["principal"]) == ("denied", 31, "User:alice")


def test_a_revoke_larger_than_a_batch_takes_one_transaction_per_batch(
    client: TestClient, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zk_admission_module, "BATCH", 3)
    made = {_create(client, ADMIN, "User:carol")["tokenId"] for _ in range(7)}
    names_before = set(raw_zk.get_children(TokenChangeZNode.ROOT))

    revoked = _revoke(client, {"owner": "User:carol"})

    assert set(revoked) == made and len(revoked) == 7
    assert _remaining(raw_zk) == set()
    new = set(raw_zk.get_children(TokenChangeZNode.ROOT)) - names_before
    # every operation of one multi-op transaction carries the same zxid: the notifications tell the batches
    zxids = Counter(raw_zk.exists(f"{TokenChangeZNode.ROOT}/{name}").czxid for name in new)
    assert sorted(zxids.values()) == [1, 3, 3]


def test_a_token_expired_concurrently_by_another_replica_is_skipped(
    client: TestClient,
    make_client: Callable[..., TestClient],
    raw_zk: KazooClient,
    tokens: dict[str, Token],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other_replica = make_client(service_id="other")
    victim = tokens["alice2"]["tokenId"]
    revocation = client.app.state.runtime.revocation
    store: ZkTokenStore = revocation._store
    raced: list[int] = []

    class RacingStore:
        """The revoking replica's store; right after the revoke read its batch, another replica expires one
        of its tokens, before the batch's delete lands (the token cache keeps the untouched store)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def get_many(self, token_ids: list[str]) -> dict[str, Any]:
            found = store.get_many(token_ids)
            if not raced:
                expired = other_replica.post(f"/v1/tokens/{victim}/expire", json={}, headers=basic(ALICE))
                raced.append(expired.status_code)
            return found

    monkeypatch.setattr(revocation, "_store", RacingStore())

    revoked = _revoke(client, {"owner": "User:alice"})

    assert raced == [200]
    assert set(revoked) == _ids(tokens, "alice1", "alice_by_admin")
    assert _remaining(raw_zk) == _ids(tokens, "bob_by_admin", "bob")
    events = _events(client)
    (summary,) = [event for event in events if event["action"] == "token.revoke"]
    assert (summary["outcome"], summary["details"]["revoked"]) == ("succeeded", 2)
    succeeded = [e for e in events if e["action"] == "token.expire" and e["outcome"] == "succeeded"]
    # the other replica's expire and the two revocations; the refused batch attempt is on record, not applied
    assert sorted(e["tokenId"] for e in succeeded) == sorted([victim, *_ids(tokens, "alice1", "alice_by_admin")])
