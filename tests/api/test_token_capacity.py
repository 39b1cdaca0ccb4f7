"""The cluster capacity guard with two replicas on one real ZooKeeper and a small
``zookeeper.children.max.bytes``: creates from several owners, alternating between replicas, are refused with
503 TOKEN_CAPACITY_EXHAUSTED before either child list passes its limit; expires still work; Debian's ZooKeeper
Java client lists both lists at the end. Shares are off here (``token.write.share.ratio=0``): this is the
cluster-wide guard alone (tests/api/test_token_shares.py has the shares)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.domain.capacity import CREATE, CapacityPolicy, ChildList, ListReading, Purpose, Readings, names_reply_bytes
from tests.api.conftest import ADMIN, ALICE, BOB, CAROL, basic
from tests.java_zookeeper_client import java_ls

pytestmark = pytest.mark.only_on("zookeeper", "the capacity guard is ZooKeeper's (zookeeper.children.max.bytes)")

BUDGET = 4_000
POLICY = CapacityPolicy(BUDGET)
OWNERS = (ALICE, BOB, CAROL)


def _sizes(raw_zk: KazooClient) -> dict[ChildList, int]:
    """Both lists' sizes as a Java client receives them, from the real names."""
    return {child_list: names_reply_bytes(raw_zk.get_children(child_list.path)) for child_list in ChildList}


def _readings(tokens: int, changes: int) -> Readings:
    return {
        ChildList.TOKENS: ListReading(ChildList.TOKENS, tokens),
        ChildList.TOKEN_CHANGES: ListReading(ChildList.TOKEN_CHANGES, changes),
    }


def _creates_until_full(policy: CapacityPolicy, tokens: int, changes: int) -> int:
    """How many creates the policy admits from these counts (each adds a token and a notification)."""
    admitted = 0
    while policy.full_list(_readings(tokens + admitted, changes + admitted), CREATE, Purpose.ISSUE) is None:
        admitted += 1
    return admitted


def _flood(
    replicas: list[TestClient], raw_zk: KazooClient, created: list[dict[str, Any]], *, most: int
) -> tuple[int, Any]:
    """Create tokens for several owners on alternating replicas until one is refused; after every answer
    neither list may be past the limit of creates. Returns how many were created and the refusal."""
    for attempt in range(most):
        owner = OWNERS[attempt % len(OWNERS)]
        response = replicas[attempt % len(replicas)].post("/v1/tokens", json={}, headers=basic(owner))
        sizes = _sizes(raw_zk)
        assert all(size <= POLICY.limit(Purpose.ISSUE) for size in sizes.values()), sizes
        if response.status_code != 201:
            return attempt, response
        created.append(response.json())
    raise AssertionError(f"{most} creates were all accepted")


def test_a_flood_of_creates_on_two_replicas_stops_before_either_list_is_full_and_expires_still_work(
    client: TestClient,
    make_client: Callable[..., TestClient],
    raw_zk: KazooClient,
    zk_connect: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="app.storage.zk.capacity")
    other = make_client(zookeeper_children_max_bytes=BUDGET, token_write_share_ratio=0)
    first = make_client(zookeeper_children_max_bytes=BUDGET, token_write_share_ratio=0)
    replicas = [first, other]
    created: list[dict[str, Any]] = []

    # 1. The notification list fills first: each create writes a notification now and keeps room for the one
    # its token writes when deleted, and no notification is 15 minutes old yet.
    most_creates = _creates_until_full(POLICY, 0, 0)
    assert most_creates == POLICY.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE) // 2
    accepted, refusal = _flood(replicas, raw_zk, created, most=most_creates + 5)
    assert accepted == most_creates
    assert refusal.status_code == 503
    body = refusal.json()
    assert body["error"] == "TOKEN_CAPACITY_EXHAUSTED"
    assert "/delegation_token/token_changes" in body["message"]
    assert "15 minutes" in body["message"]
    assert 1 <= int(refusal.headers["Retry-After"]) <= 15 * 60
    # the other replica sees the same list and refuses too, and renews are refused as well
    assert other.post("/v1/tokens", json={}, headers=basic(CAROL)).status_code == 503
    renewed = other.post("/v1/tokens/renew", json={"hmac": created[0]["hmac"]}, headers=basic(ALICE))
    assert (renewed.status_code, renewed.json()["error"]) == (503, "TOKEN_CAPACITY_EXHAUSTED")
    assert any("past 80%" in record.getMessage() for record in caplog.records)

    # 2. Full as it is, expires still work, on either replica: revocation uses the reserve.
    for replica, token in ((other, created[0]), (first, created[1])):
        owner = ALICE if token is created[0] else BOB
        expired = replica.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=basic(owner))
        assert expired.status_code == 200, expired.text
    assert _sizes(raw_zk)[ChildList.TOKEN_CHANGES] <= BUDGET
    for replica in replicas:
        assert replica.get("/readyz").status_code == 200  # a full cluster still serves reads and expiry

    refused = first.get("/v1/audit?action=token.create&outcome=denied", headers=basic(ADMIN)).json()["events"]
    assert refused and all(event["details"]["error"] == "TOKEN_CAPACITY_EXHAUSTED" for event in refused), refused[:1]

    metrics = first.get("/metrics").text
    changes = len(raw_zk.get_children(ChildList.TOKEN_CHANGES.path))
    assert f'kts_zookeeper_children{{list="token_changes"}} {float(changes)}' in metrics
    left = re.search(r'kts_zookeeper_children_capacity_left_bytes\{list="token_changes"\} (\S+)', metrics)
    assert left and float(left.group(1)) < 2 * ChildList.TOKEN_CHANGES.entry_bytes  # not room for one create

    # 3. Fifteen minutes later the leader purges the notifications (done here by hand). Creates go on while the
    # notifications, counting one to come for each live token, fit: then every token can still be deleted.
    for name in raw_zk.get_children(ChildList.TOKEN_CHANGES.path):
        raw_zk.delete(f"{ChildList.TOKEN_CHANGES.path}/{name}")
    live = len(raw_zk.get_children(ChildList.TOKENS.path))
    expected = _creates_until_full(POLICY, live, 0)
    accepted, refusal = _flood(replicas, raw_zk, created, most=expected + 5)
    assert accepted == expected
    assert (refusal.status_code, refusal.json()["error"]) == (503, "TOKEN_CAPACITY_EXHAUSTED")
    assert "(/delegation_token/token_changes)" in refusal.json()["message"]
    assert "each live token will write when it is deleted" in refusal.json()["message"]
    assert int(refusal.headers["Retry-After"]) >= 1

    # 4. Revocation always works: every live token is expired, none refused, and the notifications they write
    # stay under the limit of creates.
    for index, name in enumerate(raw_zk.get_children(ChildList.TOKENS.path)):
        expired = replicas[index % 2].post(f"/v1/tokens/{name}/expire", json={}, headers=basic(ADMIN))
        assert expired.status_code == 200, expired.text
    assert raw_zk.get_children(ChildList.TOKENS.path) == []
    assert _sizes(raw_zk)[ChildList.TOKEN_CHANGES] <= POLICY.limit(Purpose.ISSUE)

    # 5. Brokers can still list both.
    sizes = _sizes(raw_zk)
    assert all(size <= BUDGET for size in sizes.values()), sizes
    for child_list in ChildList:
        listing = java_ls(zk_connect, child_list.path)
        assert listing.listed, listing.output


def test_concurrent_creates_on_two_replicas_overshoot_at_most_one_entry_per_request_in_flight(
    client: TestClient, make_client: Callable[..., TestClient], raw_zk: KazooClient
) -> None:
    budget = 10_000
    policy = CapacityPolicy(budget)
    replicas = [make_client(zookeeper_children_max_bytes=budget, token_write_share_ratio=0) for _ in range(2)]
    workers = 8
    most = _creates_until_full(policy, 0, 0)

    def create(attempt: int) -> int:
        owner = OWNERS[attempt % len(OWNERS)]
        return replicas[attempt % 2].post("/v1/tokens", json={}, headers=basic(owner)).status_code

    with ThreadPoolExecutor(workers) as pool:
        statuses = list(pool.map(create, range(most + 4 * workers)))

    assert set(statuses) == {201, 503}
    changes = len(raw_zk.get_children(ChildList.TOKEN_CHANGES.path))
    assert statuses.count(201) == changes == len(raw_zk.get_children(ChildList.TOKENS.path))
    # each request in flight when the list filled may have passed its check: at most `workers` entries past
    assert most <= changes <= most + workers
    assert names_reply_bytes(raw_zk.get_children(ChildList.TOKEN_CHANGES.path)) <= budget  # inside the reserve
