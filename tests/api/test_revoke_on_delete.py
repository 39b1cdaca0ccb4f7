"""token.revoke.on.credential.delete and token.revoke.on.acl.delete: off (Kafka's behaviour), removing a
user's credentials or a requester's CreateTokens grant leaves the tokens; on, the tokens made possible by
what was removed are revoked, audited with the reason (docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.conftest import ADMIN, ALICE, BOB, basic, put_user

pytestmark = pytest.mark.only_on("zookeeper", "deletes credentials and ACLs behind kts's back as znodes")

NIMBUS = ("nimbus", "nimbus-pw")
Token = dict[str, Any]


def _create(client: TestClient, user: tuple[str, str], owner: str | None = None) -> str:
    response = client.post("/v1/tokens", json={} if owner is None else {"owner": owner}, headers=basic(user))
    assert response.status_code == 201, response.text
    token_id: str = response.json()["tokenId"]
    return token_id


def _remaining(raw_zk: KazooClient) -> set[str]:
    return set(raw_zk.get_children(TokenZNode.ROOT))


def _revocations(client: TestClient) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The per-token events and the summaries of revocations, oldest first."""
    events = list(reversed(client.get("/v1/audit?limit=1000", headers=basic(ADMIN)).json()["events"]))
    per_token = [e for e in events if e["action"] == "token.expire" and e["details"].get("reason")]
    return per_token, [e for e in events if e["action"] == "token.revoke"]


def _grant(client: TestClient, name: str, pattern_type: str = "LITERAL", **changes: str) -> dict[str, str]:
    acl = {
        "resourceType": "User",
        "resourceName": name,
        "patternType": pattern_type,
        "principal": "User:nimbus",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    } | changes
    assert client.post("/v1/acls", json=acl, headers=basic(ADMIN)).status_code == 201
    return acl


def _delete_acls(client: TestClient, **selector: str) -> list[dict[str, str]]:
    response = client.delete("/v1/acls", params=selector, headers=basic(ADMIN))
    assert response.status_code == 200, response.text
    deleted: list[dict[str, str]] = response.json()["deleted"]
    return deleted


@pytest.mark.parametrize("enabled", [False, True], ids=["off", "on"])
def test_deleting_a_users_last_credential_revokes_its_tokens_only_when_enabled(
    make_client: Callable[..., TestClient], raw_zk: KazooClient, enabled: bool
) -> None:
    for user in (ADMIN, ALICE, BOB):
        put_user(raw_zk, *user)
    client = make_client(token_revoke_on_credential_delete=enabled)
    alices = {_create(client, ALICE), _create(client, ADMIN, "User:alice")}
    others = {_create(client, BOB), _create(client, ADMIN, "User:bob")}
    # a second mechanism: deleting one of two leaves alice able to log in, so nothing is revoked yet
    second = client.put(
        "/v1/users/alice/credentials", json={"mechanism": "SCRAM-SHA-256", "password": "pw2"}, headers=basic(ADMIN)
    )
    assert second.status_code == 200
    first = client.delete("/v1/users/alice/credentials?mechanism=SCRAM-SHA-512", headers=basic(ADMIN))
    assert first.status_code == 200
    assert _remaining(raw_zk) == alices | others

    last = client.delete("/v1/users/alice/credentials?mechanism=SCRAM-SHA-256", headers=basic(ADMIN))
    assert last.status_code == 200

    per_token, summaries = _revocations(client)
    if not enabled:
        assert _remaining(raw_zk) == alices | others
        assert per_token == [] and summaries == []
        return
    assert _remaining(raw_zk) == others
    assert {e["tokenId"] for e in per_token} == alices
    assert all(
        (e["outcome"], e["principal"], e["owner"], e["details"]["reason"])
        == ("succeeded", "User:admin", "User:alice", "credential.delete")
        for e in per_token
    )
    (summary,) = summaries
    assert (summary["outcome"], summary["owner"], summary["details"]) == (
        "succeeded",
        "User:alice",
        {"reason": "credential.delete", "revoked": 2},
    )


@pytest.mark.parametrize("enabled", [False, True], ids=["off", "on"])
def test_removing_a_literal_grant_revokes_the_requesters_tokens_for_that_owner_only_when_enabled(
    make_client: Callable[..., TestClient], raw_zk: KazooClient, enabled: bool
) -> None:
    for user in (ADMIN, NIMBUS):
        put_user(raw_zk, *user)
    client = make_client(token_revoke_on_acl_delete=enabled)
    _grant(client, "User:joe")
    _grant(client, "User:mary")
    for_joe = {_create(client, NIMBUS, "User:joe"), _create(client, NIMBUS, "User:joe")}
    kept = {
        _create(client, NIMBUS, "User:mary"),  # another grant, not removed
        _create(client, NIMBUS),  # nimbus's own: no grant needed
        _create(client, ADMIN, "User:joe"),  # another requester
    }

    assert [acl["resourceName"] for acl in _delete_acls(client, resourceName="User:joe")] == ["User:joe"]

    per_token, summaries = _revocations(client)
    if not enabled:
        assert _remaining(raw_zk) == for_joe | kept
        assert per_token == [] and summaries == []
        return
    assert _remaining(raw_zk) == kept
    assert {e["tokenId"] for e in per_token} == for_joe
    assert all(
        (e["owner"], e["tokenRequester"], e["details"]["reason"]) == ("User:joe", "User:nimbus", "acl.delete")
        for e in per_token
    )
    (summary,) = summaries
    assert summary["outcome"] == "succeeded"
    assert summary["details"]["reason"] == "acl.delete"
    assert summary["details"]["revoked"] == 2
    assert [acl["resourceName"] for acl in summary["details"]["acls"]] == ["User:joe"]


def test_removing_a_prefixed_grant_keeps_the_tokens_another_acl_still_allows(
    make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    for user in (ADMIN, NIMBUS):
        put_user(raw_zk, *user)
    client = make_client(token_revoke_on_acl_delete=True)
    _grant(client, "User:etl-", "PREFIXED")
    _grant(client, "User:etl-keep")  # a literal grant that stays
    _grant(client, "User:etl-other", host="192.0.2.7")  # stays, but only for one host
    _grant(client, "User:etl-host-only", host="192.0.2.7")
    lost = {_create(client, NIMBUS, "User:etl-a"), _create(client, NIMBUS, "User:etl-b")}
    kept = _create(client, NIMBUS, "User:etl-keep")
    # made under the prefixed grant from any host; what remains allows it from 192.0.2.7 only: it goes
    host_bound = _create(client, NIMBUS, "User:etl-other")
    # a removed Deny revokes nothing
    _grant(client, "User:etl-", "PREFIXED", permissionType="Deny", principal="User:mallory")
    assert _delete_acls(client, principal="User:mallory") != []
    assert _revocations(client) == ([], [])

    deleted = _delete_acls(client, resourceName="User:etl-", patternType="PREFIXED")

    assert [acl["patternType"] for acl in deleted] == ["PREFIXED"]
    assert _remaining(raw_zk) == {kept}
    per_token, (summary,) = _revocations(client)
    assert {e["tokenId"] for e in per_token} == lost | {host_bound}
    assert summary["details"]["revoked"] == 3


def test_removing_a_wildcard_grant_revokes_every_requesters_tokens_but_a_super_users(
    make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    for user in (ADMIN, NIMBUS):
        put_user(raw_zk, *user)
    client = make_client(token_revoke_on_acl_delete=True)
    _grant(client, "*", principal="User:*")
    joes = _create(client, NIMBUS, "User:joe")
    by_admin = _create(client, ADMIN, "User:joe")  # a super user needs no grant

    _delete_acls(client, resourceName="*")

    assert _remaining(raw_zk) == {by_admin}
    per_token, _ = _revocations(client)
    assert [e["tokenId"] for e in per_token] == [joes]
