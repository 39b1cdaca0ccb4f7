"""Concurrent renew and expire of one token through two app instances sharing one ZooKeeper."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.conftest import ALICE, basic

pytestmark = pytest.mark.only_on("zookeeper", "asserts the token znode's data and version after racing writes")


def test_concurrent_renews_end_at_the_last_acknowledged_expiry(
    client: TestClient, make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    other = make_client()
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()

    def renew(args: tuple[TestClient, int]) -> tuple[int, int]:
        replica, period = args
        response = replica.post(
            "/v1/tokens/renew", json={"hmac": token["hmac"], "renewTimePeriodMs": period}, headers=basic(ALICE)
        )
        return response.status_code, response.json().get("expiryTimestamp", -1)

    jobs = [(client if n % 2 else other, 60_000 + n) for n in range(40)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(renew, jobs))
    assert {status for status, _ in results} <= {200, 409}
    acknowledged = [expiry for status, expiry in results if status == 200]
    assert acknowledged
    stored = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")[0])
    assert stored["expiryTimestamp"] in acknowledged
    _, stat = raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")
    assert stat.version == len(acknowledged)  # every acknowledged renew is one write, none lost


def test_concurrent_renew_and_expire_leave_a_consistent_state(
    client: TestClient, make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    other = make_client()
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()

    def act(n: int) -> tuple[str, int]:
        replica = client if n % 2 else other
        path = "/v1/tokens/expire" if n == 10 else "/v1/tokens/renew"
        response = replica.post(path, json={"hmac": token["hmac"]}, headers=basic(ALICE))
        return path, response.status_code

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(act, range(30)))
    assert {status for _, status in results} <= {200, 404, 409}
    if ("/v1/tokens/expire", 200) in results:
        # an acknowledged expire-now is final: no renew resurrected the token
        assert raw_zk.exists(f"{TokenZNode.ROOT}/{token['tokenId']}") is None
    else:  # the expire lost every compare-and-set round and said so (409); the renews stand
        assert raw_zk.exists(f"{TokenZNode.ROOT}/{token['tokenId']}") is not None
