"""Renew and expire (by HMAC and by token id): Kafka's order of checks, new expiries, deletes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.backends import User
from tests.api.conftest import ALICE, BOB, CAROL, basic, bearer
from tests.api.helpers import broker_writes_token, eventually, notifications, token_state

DAY = 86_400_000


def _create(client: TestClient, caller: tuple[str, str] | User = ALICE, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/tokens", json=body, headers=basic(caller))
    assert response.status_code == 201
    return response.json()


def _znode(raw_zk: KazooClient, token_id: str) -> dict[str, Any]:
    return json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token_id}")[0])


def _wait_until_expired(token: dict[str, Any]) -> None:
    while time.time() * 1000 <= token["maxTimestamp"] + 1:
        time.sleep(0.005)


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_owner_renews_with_default_period(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client)
    before_ms = int(time.time() * 1000)
    response = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(ALICE))
    assert response.status_code == 200
    body = response.json()
    assert body["tokenId"] == token["tokenId"]
    assert before_ms + DAY <= body["expiryTimestamp"] <= int(time.time() * 1000) + DAY
    assert _znode(raw_zk, token["tokenId"])["expiryTimestamp"] == body["expiryTimestamp"]
    assert notifications(raw_zk) == [token["tokenId"].encode()] * 2


def test_renew_with_explicit_period_and_clamping_to_max(client: TestClient, alice: User) -> None:
    token = _create(client, alice, maxLifetimeMs=3_600_000)
    short = client.post(
        "/v1/tokens/renew", json={"hmac": token["hmac"], "renewTimePeriodMs": 60_000}, headers=alice.basic
    )
    now = int(time.time() * 1000)
    assert now - 1000 <= short.json()["expiryTimestamp"] - 60_000 <= now
    long = client.post(
        "/v1/tokens/renew", json={"hmac": token["hmac"], "renewTimePeriodMs": 10 * DAY}, headers=alice.basic
    )
    assert long.json()["expiryTimestamp"] == token["maxTimestamp"]


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_renewer_may_renew_but_stranger_may_not(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client, renewers=["User:bob"])
    assert client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(BOB)).status_code == 200
    before = token_state(raw_zk)
    refused = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(CAROL))
    assert refused.status_code == 403
    assert refused.json()["code"] == 63
    assert token_state(raw_zk) == before


def test_super_user_may_renew_and_expire_any_token(client: TestClient, alice: User, admin: User) -> None:
    token = _create(client, alice)
    assert client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=admin.basic).status_code == 200
    assert client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=admin.basic).status_code == 200


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_expired_token_cannot_be_renewed(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client, maxLifetimeMs=1)
    _wait_until_expired(token)
    before = token_state(raw_zk)
    response = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=basic(ALICE))
    assert response.status_code == 410
    assert response.json()["code"] == 66
    assert token_state(raw_zk) == before


def test_owner_check_comes_before_expiry_check(client: TestClient, alice: User, carol: User) -> None:
    token = _create(client, alice, maxLifetimeMs=1)
    _wait_until_expired(token)
    response = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]}, headers=carol.basic)
    assert response.json()["code"] == 63


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_expire_now_deletes_the_znode_and_notifies(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client)
    response = client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=basic(ALICE))
    assert response.status_code == 200
    assert response.json()["expiryTimestamp"] <= int(time.time() * 1000)
    assert raw_zk.exists(f"{TokenZNode.ROOT}/{token['tokenId']}") is None
    assert notifications(raw_zk) == [token["tokenId"].encode()] * 2
    again = client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=basic(ALICE))
    assert again.status_code == 404


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_expire_with_period_sets_expiry(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client)
    response = client.post(
        "/v1/tokens/expire", json={"hmac": token["hmac"], "expiryTimePeriodMs": 5_000}, headers=basic(ALICE)
    )
    now = int(time.time() * 1000)
    assert now - 1000 <= response.json()["expiryTimestamp"] - 5_000 <= now
    assert _znode(raw_zk, token["tokenId"])["expiryTimestamp"] == response.json()["expiryTimestamp"]


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_expiring_an_expired_token_deletes_it(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client, maxLifetimeMs=1)
    _wait_until_expired(token)
    response = client.post(
        "/v1/tokens/expire", json={"hmac": token["hmac"], "expiryTimePeriodMs": 60_000}, headers=basic(ALICE)
    )
    assert response.status_code == 200
    assert raw_zk.exists(f"{TokenZNode.ROOT}/{token['tokenId']}") is None


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_stranger_cannot_expire(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client)
    before = token_state(raw_zk)
    response = client.post("/v1/tokens/expire", json={"hmac": token["hmac"]}, headers=basic(CAROL))
    assert response.status_code == 403
    assert response.json()["code"] == 63
    assert token_state(raw_zk) == before


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/tokens/renew", "hmac"),
        ("/v1/tokens/expire", "hmac"),
        ("/v1/tokens/{id}/renew", None),
        ("/v1/tokens/{id}/expire", None),
    ],
)
@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_token_authenticated_callers_get_64(
    client: TestClient, raw_zk: KazooClient, path: str, body: str | None
) -> None:
    token = _create(client)
    before = token_state(raw_zk)
    payload = {"hmac": token["hmac"]} if body else {}
    response = client.post(path.replace("{id}", token["tokenId"]), json=payload, headers=bearer(token))
    assert response.status_code == 403
    assert response.json()["code"] == 64
    assert token_state(raw_zk) == before


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_renew_and_expire_by_token_id(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client, renewers=["User:bob"])
    renewed = client.post(f"/v1/tokens/{token['tokenId']}/renew", json={"renewTimePeriodMs": 1000}, headers=basic(BOB))
    assert renewed.status_code == 200
    json_type = {"content-type": "application/json"}
    no_body = client.post(f"/v1/tokens/{token['tokenId']}/renew", headers=basic(ALICE) | json_type)
    assert no_body.status_code == 200
    expired = client.post(f"/v1/tokens/{token['tokenId']}/expire", headers=basic(ALICE) | json_type)
    assert expired.status_code == 200
    assert raw_zk.exists(f"{TokenZNode.ROOT}/{token['tokenId']}") is None


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_token_id_paths_hide_tokens_the_caller_cannot_see(client: TestClient, raw_zk: KazooClient) -> None:
    token = _create(client)
    before = token_state(raw_zk)
    for action in ("renew", "expire"):
        response = client.post(f"/v1/tokens/{token['tokenId']}/{action}", json={}, headers=basic(CAROL))
        assert response.status_code == 404
        assert response.json()["code"] == 62
    assert token_state(raw_zk) == before


@pytest.mark.only_on("zookeeper", "asserts the token znodes and notifications renew and expire write")
def test_requester_sees_but_may_not_renew(client: TestClient, raw_zk: KazooClient) -> None:
    """A requester who is neither owner nor renewer may describe the token, not renew it (63)."""
    now = int(time.time() * 1000)
    broker_writes_token(
        raw_zk,
        "RQtokenAAAAAAAAAAAAAAA",
        json.dumps(
            {
                "version": 3,
                "tokenId": "RQtokenAAAAAAAAAAAAAAA",
                "owner": "User%3Abob",
                "tokenRequester": "User%3Acarol",
                "renewers": [],
                "issueTimestamp": now,
                "expiryTimestamp": now + DAY,
                "maxTimestamp": now + 2 * DAY,
            }
        ).encode(),
    )
    eventually(lambda: client.get("/v1/tokens/RQtokenAAAAAAAAAAAAAAA", headers=basic(CAROL)).status_code == 200)
    response = client.post("/v1/tokens/RQtokenAAAAAAAAAAAAAAA/renew", json={}, headers=basic(CAROL))
    assert response.status_code == 403
    assert response.json()["code"] == 63
