"""Tokens a broker wrote (raw v1 and v3 znodes) are described, renewed and expired like kts's own."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.conftest import ALICE, BOB, basic
from tests.api.helpers import broker_writes_token, eventually
from tests.conftest import SECRET

pytestmark = pytest.mark.only_on("zookeeper", "reads token znodes a broker wrote (v1 and v3 formats)")

DAY = 86_400_000


def _broker_token(raw_zk: KazooClient, token_id: str, version: int) -> str:
    """Put a token znode exactly as a Kafka broker of that version writes it; returns its base64 HMAC."""
    now = int(time.time() * 1000)
    doc: dict[str, object] = {
        "issueTimestamp": now,
        "renewers": ["User%3Abob"],
        "tokenId": token_id,
        "owner": "User%3Aalice",
        "expiryTimestamp": now + DAY,
        "maxTimestamp": now + 7 * DAY,
        "version": version,
    }
    if version == 3:
        doc["tokenRequester"] = "User%3Aalice"
    broker_writes_token(raw_zk, token_id, json.dumps(doc, separators=(",", ":")).encode())
    mac = hmac.new(SECRET.encode(), token_id.encode(), hashlib.sha512).digest()
    return base64.b64encode(mac).decode()


@pytest.mark.parametrize(("token_id", "version"), [("BrokerV1tokenAAAAAAAAA", 1), ("BrokerV3tokenAAAAAAAAA", 3)])
def test_broker_tokens_behave_like_our_own(
    client: TestClient, raw_zk: KazooClient, token_id: str, version: int
) -> None:
    mac = _broker_token(raw_zk, token_id, version)
    eventually(lambda: client.get(f"/v1/tokens/{token_id}", headers=basic(ALICE)).status_code == 200)
    described = client.get(f"/v1/tokens/{token_id}", headers=basic(ALICE)).json()
    assert (described["owner"], described["tokenRequester"], described["renewers"]) == (
        "User:alice",
        "User:alice",
        ["User:bob"],
    )
    assert token_id in {t["tokenId"] for t in client.get("/v1/tokens", headers=basic(BOB)).json()["tokens"]}
    verified = client.post("/v1/tokens/verify", json={"tokenId": token_id, "hmac": mac}, headers=basic(BOB))
    assert verified.json()["principal"] == "User:alice"

    renewed = client.post("/v1/tokens/renew", json={"hmac": mac, "renewTimePeriodMs": 1000}, headers=basic(BOB))
    assert renewed.status_code == 200
    stored = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token_id}")[0])
    assert stored["expiryTimestamp"] == renewed.json()["expiryTimestamp"]
    assert stored["version"] == 3  # rewritten in the configured format

    assert client.post("/v1/tokens/expire", json={"hmac": mac}, headers=basic(ALICE)).status_code == 200
    assert raw_zk.exists(f"{TokenZNode.ROOT}/{token_id}") is None


def test_unreadable_token_znodes_are_skipped_not_fatal(client: TestClient, raw_zk: KazooClient) -> None:
    broker_writes_token(raw_zk, "GarbageTokenAAAAAAAAAA", b"{not json")
    broker_writes_token(
        raw_zk,
        "StringTimesAAAAAAAAAAA",
        json.dumps(
            {
                "version": 3,
                "tokenId": "StringTimesAAAAAAAAAAA",
                "owner": "User%3Aalice",
                "tokenRequester": "User%3Aalice",
                "renewers": [],
                "issueTimestamp": "1",
                "expiryTimestamp": "2",
                "maxTimestamp": "3",
            }
        ).encode(),
    )
    mine = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    listing = client.get("/v1/tokens", headers=basic(ALICE))
    assert listing.status_code == 200
    assert [t["tokenId"] for t in listing.json()["tokens"]] == [mine["tokenId"]]
    assert client.get("/v1/tokens/GarbageTokenAAAAAAAAAA", headers=basic(ALICE)).status_code == 404
