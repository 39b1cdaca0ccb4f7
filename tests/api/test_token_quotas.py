"""Per-user token quotas through the real API on a real ZooKeeper: the owner quota and the requester quota
refuse with 429 ``TOKEN_QUOTA_EXCEEDED`` and an audited refusal; expired tokens the sweeper has not deleted
yet do not count (time is the system clock plus an offset the test moves: no sleeping); super users count
unless exempt; a KIP-373 requester's tokens count against its own quota, never the owner's, and its refusal
never tells the owner's count; and two replicas racing to create for one owner never take it past its quota.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.app import create_app
from app.backends import load_settings
from app.storage.zk.znodes import TokenZNode
from tests.api.conftest import ADMIN, ALICE, BOB, basic, put_user
from tests.clocks import ShiftedClock
from tests.conftest import SECRET

NIMBUS = ("nimbus", "nimbus-pw")


class Replica:
    def __init__(self, client: TestClient, clock: ShiftedClock) -> None:
        self.client = client
        self.clock = clock

    def create(self, user: tuple[str, str], **body: Any) -> Any:
        return self.client.post("/v1/tokens", json=body, headers=basic(user))


@pytest.fixture
def make_replica(zk_connect: str, raw_zk: KazooClient, tmp_path: Path) -> Iterator[Callable[..., Replica]]:
    for name, password in (ADMIN, ALICE, BOB, NIMBUS):
        put_user(raw_zk, name, password)
    clients: list[TestClient] = []

    def make(**overrides: Any) -> Replica:
        values: dict[str, Any] = {
            "zookeeper_connect": zk_connect,
            "delegation_token_secret_key": SECRET,
            "super_users": "User:admin",
            "service_id": f"replica-{len(clients)}",
            "audit_db_url": f"sqlite:///{tmp_path / f'audit-{len(clients)}.db'}",
        }
        clock = ShiftedClock()
        app = create_app(load_settings(**(values | overrides)), clock=clock)
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return Replica(client, clock)

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def _owned_in_zookeeper(raw_zk: KazooClient, owner: str) -> int:
    docs = [json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{name}")[0]) for name in raw_zk.get_children(TokenZNode.ROOT)]
    return sum(doc["owner"] == owner.replace(":", "%3A") for doc in docs)


def _grant_create_tokens(replica: Replica, owner: str, principal: str = "User:nimbus") -> None:
    acl = {
        "resourceType": "User",
        "resourceName": owner,
        "patternType": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }
    assert replica.client.post("/v1/acls", json=acl, headers=basic(ADMIN)).status_code == 201


def test_the_owner_quota_refuses_with_429_naming_quota_limit_and_count(make_replica: Callable[..., Replica]) -> None:
    replica = make_replica(token_quota_per_owner=3)
    made = [replica.create(ALICE) for _ in range(3)]
    assert [response.status_code for response in made] == [201, 201, 201]

    refused = replica.create(ALICE)
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"] == "TOKEN_QUOTA_EXCEEDED"
    assert body["message"] == (
        "The owner quota of User:alice (token.quota.per.owner) is 3 live tokens and 3 live tokens count "
        "against it; expire a token or wait for one to expire."
    )
    assert replica.create(BOB).status_code == 201  # another owner's quota is its own

    denied = replica.client.get("/v1/audit?action=token.create&outcome=denied", headers=basic(ADMIN)).json()
    assert [(event["principal"], event["details"].get("error")) for event in denied["events"]] == [
        ("User:alice", "TOKEN_QUOTA_EXCEEDED")
    ]

    first = made[0].json()
    expired = replica.client.post(
        f"/v1/tokens/{first['tokenId']}/expire", json={"expiryTimePeriodMs": -1}, headers=basic(ALICE)
    )
    assert expired.status_code == 200
    assert replica.create(ALICE).status_code == 201  # room again


def test_expired_tokens_never_count_even_before_the_sweeper_deletes_them(
    make_replica: Callable[..., Replica], raw_zk: KazooClient
) -> None:
    replica = make_replica(token_quota_per_owner=2)
    short = [replica.create(ALICE, maxLifetimeMs=60_000) for _ in range(2)]
    assert [response.status_code for response in short] == [201, 201]
    assert replica.create(ALICE).status_code == 429

    replica.clock.offset_ms += 120_000  # both have expired; the sweeper (hourly) has not run
    assert _owned_in_zookeeper(raw_zk, "User:alice") == 2
    assert [replica.create(ALICE).status_code for _ in range(2)] == [201, 201]
    assert _owned_in_zookeeper(raw_zk, "User:alice") == 4  # two expired, two live
    third = replica.create(ALICE)
    assert third.status_code == 429
    assert "2 live tokens count against it" in third.json()["message"]


def test_the_requester_quota_counts_tokens_held_for_other_owners(
    make_replica: Callable[..., Replica], raw_zk: KazooClient
) -> None:
    replica = make_replica(token_quota_per_owner=0, token_quota_per_requester=2)
    for owner in ("User:joe", "User:ann"):
        _grant_create_tokens(replica, owner)
    assert replica.create(NIMBUS, owner="User:joe").status_code == 201
    assert replica.create(NIMBUS, owner="User:ann").status_code == 201

    refused = replica.create(NIMBUS, owner="User:joe")
    assert refused.status_code == 429
    assert refused.json()["error"] == "TOKEN_QUOTA_EXCEEDED"
    assert refused.json()["message"] == (
        "The quota of tokens User:nimbus holds for other owners (token.quota.per.requester) is 2 live tokens "
        "and 2 live tokens count against it; expire a token or wait for one to expire."
    )
    # Its own tokens are not held for others; no owner quota is set (0: no limit).
    assert [replica.create(NIMBUS).status_code for _ in range(3)] == [201, 201, 201]
    assert _owned_in_zookeeper(raw_zk, "User:joe") == 1


def test_a_requester_cannot_fill_the_owners_quota_and_its_429_never_tells_the_owners_count(
    make_replica: Callable[..., Replica], raw_zk: KazooClient
) -> None:
    """The attack (issue 23): nimbus, allowed to make tokens for alice (KIP-373), made tokens for her until her
    owner quota was full, so alice could make none of her own, and each 429 told nimbus how many tokens alice
    held. Now tokens made for an owner count against the requester's quota only, on both replicas."""
    replicas = [make_replica(token_quota_per_owner=2, token_quota_per_requester=3) for _ in range(2)]
    _grant_create_tokens(replicas[0], "User:alice")
    assert replicas[0].create(ALICE).status_code == 201  # alice holds one of her own

    for_alice = [replicas[n % 2].create(NIMBUS, owner="User:alice").status_code for n in range(5)]
    assert for_alice == [201, 201, 201, 429, 429]  # nimbus's own quota for other owners, 3

    refused = replicas[1].create(NIMBUS, owner="User:alice")
    body = refused.json()
    assert (refused.status_code, body["error"]) == (429, "TOKEN_QUOTA_EXCEEDED")
    assert body["message"] == (
        "The quota of tokens User:nimbus holds for other owners (token.quota.per.requester) is 3 live tokens "
        "and 3 live tokens count against it; expire a token or wait for one to expire."
    )
    assert "alice" not in body["message"]  # nothing about the owner: neither her name nor her count

    # alice's own quota is untouched by the four tokens held in her name: she makes her second, on either replica
    assert _owned_in_zookeeper(raw_zk, "User:alice") == 4
    assert replicas[1].create(ALICE).status_code == 201
    third = replicas[0].create(ALICE)
    assert third.status_code == 429
    assert (
        "The owner quota of User:alice (token.quota.per.owner) is 2 live tokens and 2 live tokens"
        in (third.json()["message"])
    )
    print(
        "KIP-373 requester: 3 tokens for the owner admitted, then 429 naming its own quota only; "
        "owner: 2 own creates 201 (her quota), then 429 naming hers"
    )


def test_super_users_are_counted_unless_exempt(make_replica: Callable[..., Replica]) -> None:
    counted = make_replica(token_quota_per_owner=2)
    assert [counted.create(ADMIN).status_code for _ in range(3)] == [201, 201, 429]

    exempt = make_replica(token_quota_per_owner=2, token_quota_exempt_super_users=True)
    assert [exempt.create(ADMIN).status_code for _ in range(3)] == [201, 201, 201]
    assert exempt.create(ALICE).status_code == 201
    assert exempt.create(ALICE).status_code == 201
    assert exempt.create(ALICE).status_code == 429  # exemption is for super users only


def test_two_replicas_racing_for_one_owner_never_pass_the_quota(
    make_replica: Callable[..., Replica], raw_zk: KazooClient
) -> None:
    quota = 5
    replicas = [make_replica(token_quota_per_owner=quota) for _ in range(2)]

    def create(n: int) -> int:
        return int(replicas[n % 2].create(ALICE).status_code)

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(create, range(40)))
    assert set(statuses) <= {201, 409, 429}
    assert statuses.count(201) <= quota
    assert _owned_in_zookeeper(raw_zk, "User:alice") == statuses.count(201)

    # Whatever the race left, filling up from both replicas in turn stops exactly at the quota.
    filling = [int(replicas[n % 2].create(ALICE).status_code) for n in range(2 * quota + 2)]
    assert _owned_in_zookeeper(raw_zk, "User:alice") == quota
    assert filling[-2:] == [429, 429]
