"""Fair shares of the token lists (app/domain/token_share.py) against the attacks of issue 23, on two real
replicas sharing one real ZooKeeper, with the 20,000-byte budget the attacks were run against.

Without shares, one ordinary user filled the lists: tokens made with ``"maxLifetimeMs": 1`` expire at once (the
live-token quota never counts them) yet stay in ZooKeeper until the sweep, their notifications 15 minutes;
a create+expire loop holding one live token did the same in 331 cycles. Then every create and renew in the
cluster was refused, super users' included. Here each attack ends in 429 TOKEN_WRITE_SHARE_EXCEEDED for the
attacker alone, while other users and a super user still get 201; only many principals together reach the
cluster-wide 503, and a super user still creates in its reserve then. Time is the system clock plus an offset
the test moves (no sleeping); the sweep is observed, not timed. The figures the closing note quotes are printed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from app.api.app import create_app
from app.backends import load_settings
from app.domain.capacity import CREATE, CapacityPolicy, ChildList, ListReading, Purpose
from app.domain.errors import TokenWriteShareExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token_share import ShareLedger, SharePolicy, ShareWrite, ensure_within
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests.api.conftest import ADMIN, ALICE, BOB, CAROL, basic, put_user
from tests.api.helpers import eventually
from tests.clocks import ShiftedClock
from tests.conftest import SECRET

pytestmark = pytest.mark.only_on("zookeeper", "write shares of ZooKeeper's token child lists")

BUDGET = 20_000  # zookeeper.children.max.bytes of the attacks
SHARE = SharePolicy.of(BUDGET, 0.05)  # the default ratio: 1,000 bytes of each list
FLOODER = ("u24", "u24-pw")
HANDFUL = [(f"flood{n}", f"flood{n}-pw") for n in range(5)]
OTHERS = (ALICE, BOB, CAROL)
MINUTE = 60_000


class Cluster:
    """Two replicas on one ZooKeeper, whose clocks agree (one offset moves both)."""

    def __init__(self, replicas: list[TestClient], clock: ShiftedClock, raw_zk: KazooClient) -> None:
        self.replicas = replicas
        self.clock = clock
        self.raw_zk = raw_zk
        self._turn = 0

    def next(self) -> TestClient:
        self._turn += 1
        return self.replicas[self._turn % 2]

    def create(self, user: tuple[str, str], replica: TestClient | None = None, **body: Any) -> Any:
        return (replica or self.next()).post("/v1/tokens", json=body, headers=basic(user))

    def expire(self, user: tuple[str, str], token_id: str, period_ms: int = -1) -> Any:
        return self.next().post(
            f"/v1/tokens/{token_id}/expire", json={"expiryTimePeriodMs": period_ms}, headers=basic(user)
        )

    def tokens_in_zookeeper(self, user: tuple[str, str] | None = None) -> int:
        names = self.raw_zk.get_children(TokenZNode.ROOT)
        if user is None:
            return len(names)
        requester = f"User%3A{user[0]}"
        count = 0
        for name in names:
            try:
                data, _ = self.raw_zk.get(f"{TokenZNode.ROOT}/{name}")
            except NoNodeError:  # swept meanwhile
                continue
            count += json.loads(data)["tokenRequester"] == requester
        return count

    def notifications(self) -> int:
        return len(self.raw_zk.get_children(TokenChangeZNode.ROOT))

    def metric(self, name: str) -> float:
        """The sum over both replicas of a metric without labels."""
        total = 0.0
        for replica in self.replicas:
            found = re.search(rf"^{name} (\S+)$", replica.get("/metrics").text, re.MULTILINE)
            total += float(found.group(1)) if found else 0.0
        return total


@pytest.fixture
def make_cluster(zk_connect: str, raw_zk: KazooClient, tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    for name, password in (ADMIN, *OTHERS, FLOODER, *HANDFUL):
        put_user(raw_zk, name, password)
    clients: list[TestClient] = []

    def make(**overrides: Any) -> Cluster:
        clock = ShiftedClock()
        replicas = []
        for n in range(2):
            values: dict[str, Any] = {
                "zookeeper_connect": zk_connect,
                "delegation_token_secret_key": SECRET,
                "super_users": "User:admin",
                "service_id": f"replica-{n}",
                "audit_db_url": f"sqlite:///{tmp_path / 'audit.db'}",
                "zookeeper_children_max_bytes": BUDGET,
                "token_quota_per_owner": 5,  # as in the attack: 1-ms tokens are never live, never counted
            }
            client = TestClient(
                create_app(load_settings(**(values | overrides)), clock=clock), raise_server_exceptions=False
            )
            client.__enter__()
            clients.append(client)
            replicas.append(client)
        return Cluster(replicas, clock, raw_zk)

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def _share_creates() -> int:
    """How many creates one principal's share admits from nothing, within a minute (its tokens staying in
    ZooKeeper or swept, which only turns their notification to come into one written): the pure rule, to
    compare the replicas' answers with."""
    ledger, tokens, now = ShareLedger(), 0, 1_700_000_000_000
    principal = KafkaPrincipal.user("u")
    admitted = 0
    while True:
        try:
            ensure_within(SHARE, principal, tokens, ledger, ShareWrite.CREATE, now)
        except TokenWriteShareExceeded:
            return admitted
        ledger, tokens, admitted = ledger.charged(1, now), tokens + 1, admitted + 1


def _flood_until_refused(cluster: Cluster, user: tuple[str, str], *, most: int = 1_000, **body: Any) -> tuple[int, Any]:
    for attempt in range(most):
        response = cluster.create(user, **body)
        if response.status_code != 201:
            return attempt, response
    raise AssertionError(f"{most} creates by {user[0]} were all admitted")


def _assert_share_refusal(response: Any, user: tuple[str, str]) -> None:
    body = response.json()
    assert (response.status_code, body["error"]) == (429, "TOKEN_WRITE_SHARE_EXCEEDED"), response.text
    assert 1 <= int(response.headers["Retry-After"]) <= 17 * 60 + 60
    assert body["message"].startswith(f"The write share of User:{user[0]} is {SHARE.share_bytes} bytes")
    # its own figures only: no other principal is named
    assert re.findall(r"User:\w+", body["message"]) == [f"User:{user[0]}"]


def _others_and_admin_create(cluster: Cluster) -> tuple[int, int]:
    """Every other user creates on both replicas, and the super user; returns (201s, attempts)."""
    statuses = [cluster.create(user, replica).status_code for user in OTHERS for replica in cluster.replicas]
    statuses.append(cluster.create(ADMIN).status_code)
    return statuses.count(201), len(statuses)


def test_a_flood_of_1ms_tokens_is_refused_at_the_flooders_share_and_everyone_else_still_creates(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    kept = cluster.create(FLOODER).json()["tokenId"]  # one live token, counted in the share like the rest
    admitted, refusal = _flood_until_refused(cluster, FLOODER, maxLifetimeMs=1)
    assert admitted + 1 == _share_creates()  # exactly its share, on two replicas taking turns
    _assert_share_refusal(refusal, FLOODER)
    assert "room is expected at" in refusal.json()["message"]
    # the flood goes on: every further attempt is refused, on either replica, and writes nothing
    more = [cluster.create(FLOODER, maxLifetimeMs=1).status_code for _ in range(40)]
    assert set(more) == {429}
    made = (
        cluster.replicas[1]
        .get("/v1/audit?action=token.create&outcome=succeeded&principal=User:u24", headers=basic(ADMIN))
        .json()["events"]
    )
    assert len(made) == admitted + 1
    assert cluster.tokens_in_zookeeper(FLOODER) <= admitted + 1  # fewer once the sweep has run

    ok, attempts = _others_and_admin_create(cluster)
    assert ok == attempts
    denied = cluster.replicas[0].get("/v1/audit?action=token.create&outcome=denied", headers=basic(ADMIN)).json()
    assert {event["details"]["error"] for event in denied["events"]} == {"TOKEN_WRITE_SHARE_EXCEEDED"}
    assert {event["principal"] for event in denied["events"]} == {"User:u24"}

    # deleting is never refused, even over the share: the flooder may still expire what it holds
    assert cluster.expire(FLOODER, kept).status_code == 200

    # once its oldest notifications are purged (17 minutes later at most) its share has room again
    cluster.clock.offset_ms += 18 * MINUTE
    assert cluster.create(FLOODER, maxLifetimeMs=1).status_code == 201
    print(
        f"1-ms token flood by one user: {admitted + 1} creates admitted (one live token, then {admitted} of 1 ms), "
        f"then 429 (and {len(more)}/{len(more)} more 429); other users and the super user: {ok}/{attempts} creates 201"
    )


def test_a_create_and_expire_loop_holding_one_live_token_is_refused_at_the_users_share(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    cycles = 0
    for _ in range(1_000):
        created = cluster.create(FLOODER)
        if created.status_code != 201:
            break
        assert cluster.expire(FLOODER, created.json()["tokenId"]).status_code == 200  # deletes: never refused
        cycles += 1
    else:
        raise AssertionError("the loop was never refused")
    _assert_share_refusal(created, FLOODER)
    # each cycle holds two notifications for 15 minutes: the create's, and the deletion's, charged to the user
    assert cycles == SHARE.max_notifications // 2
    assert cluster.tokens_in_zookeeper(FLOODER) == 0
    ok, attempts = _others_and_admin_create(cluster)
    assert ok == attempts
    print(
        f"create+expire loop by one user: {cycles} cycles admitted, then 429; "
        f"others and super user: {ok}/{attempts} 201"
    )


def test_a_handful_of_flooders_at_once_on_both_replicas_leave_everyone_else_at_201(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()

    def flood(user: tuple[str, str]) -> tuple[int, int]:
        statuses = [cluster.create(user, cluster.replicas[n % 2], maxLifetimeMs=1).status_code for n in range(60)]
        return statuses.count(201), statuses.count(429)

    with ThreadPoolExecutor(len(HANDFUL)) as pool:
        results = list(pool.map(flood, HANDFUL))
    share = _share_creates()
    assert all(admitted == share and refused == 60 - share for admitted, refused in results), results
    ok, attempts = _others_and_admin_create(cluster)
    assert ok == attempts
    changes = cluster.notifications()
    total = sum(admitted for admitted, _ in results)
    print(
        f"{len(HANDFUL)} flooders at once on two replicas: {total} creates admitted ({share} each), "
        f"{sum(refused for _, refused in results)} refused 429; the notification list holds {changes} of the "
        f"{CapacityPolicy(BUDGET).max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)} entries creates may fill; "
        f"others and super user: {ok}/{attempts} 201"
    )


def test_the_leader_sweeps_soon_after_expired_tokens_pile_up(make_cluster: Callable[..., Cluster]) -> None:
    """The sweep interval is the default hour: only an early sweep can delete the flood's expired tokens."""
    cluster = make_cluster()
    admitted, refusal = _flood_until_refused(cluster, FLOODER, maxLifetimeMs=1)
    _assert_share_refusal(refusal, FLOODER)
    assert cluster.tokens_in_zookeeper(FLOODER) == admitted

    eventually(lambda: cluster.tokens_in_zookeeper(FLOODER) == 0, timeout_s=120)
    early = cluster.metric("kts_sweep_early_runs_total")
    assert early >= 1
    assert cluster.metric("kts_sweep_runs_total") == early  # no interval sweep: the hour has not passed
    # Swept, its tokens' notifications remain (15 minutes), charged to the flooder: still refused.
    _assert_share_refusal(cluster.create(FLOODER, maxLifetimeMs=1), FLOODER)
    swept = cluster.replicas[0].get("/v1/audit?action=token.sweep", headers=basic(ADMIN)).json()["events"]
    assert len(swept) == admitted
    print(f"sweep: {admitted} expired tokens swept by {int(early)} early sweep(s), interval 1 h; flooder still 429")


def test_two_replicas_racing_for_one_users_share_admit_exactly_the_share(make_cluster: Callable[..., Cluster]) -> None:
    cluster = make_cluster(token_quota_per_owner=0)

    def create(n: int) -> int:
        return int(cluster.create(FLOODER, cluster.replicas[n % 2]).status_code)

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(create, range(60)))
    assert set(statuses) <= {201, 409, 429}
    assert statuses.count(201) <= _share_creates()
    # whatever the race left (a 409 is a request to retry), filling up from both replicas stops exactly at it
    filling = [create(n) for n in range(2 * _share_creates())]
    assert cluster.tokens_in_zookeeper(FLOODER) == _share_creates()
    assert filling[-1] == 429
    print(
        f"share race, 8 threads on two replicas: {statuses.count(201)} admitted of {_share_creates()}, "
        f"{statuses.count(429)} 429, {statuses.count(409)} 409"
    )


def test_only_many_principals_together_reach_the_cluster_limit_and_a_super_user_still_creates_in_the_reserve(
    make_cluster: Callable[..., Cluster], raw_zk: KazooClient
) -> None:
    cluster = make_cluster(token_quota_per_owner=0)
    policy = CapacityPolicy(BUDGET)
    users = [(f"user{n}", f"user{n}-pw") for n in range(40)]
    for name, password in users:
        put_user(raw_zk, name, password)
    per_user = _share_creates()
    held: dict[str, list[str]] = {}
    refusal = None
    for user in users:
        for _ in range(per_user):
            response = cluster.create(user)
            if response.status_code != 201:
                refusal = response
                break
            held.setdefault(user[0], []).append(response.json()["tokenId"])
        if refusal is not None:
            break
    assert refusal is not None
    assert (refusal.status_code, refusal.json()["error"]) == (503, "TOKEN_CAPACITY_EXHAUSTED")
    principals = len(held)
    creates = sum(len(tokens) for tokens in held.values())
    assert principals > 1 / 0.05 * 0.9 - 1  # many: about as many as the shares the limit holds
    assert creates == _creates_until(policy, Purpose.ISSUE)

    # A renew is refused too, and an expire that would extend a token is no way around it: 503 as well.
    in_reserve = cluster.create(ADMIN)  # the super user issues in its reserve...
    assert in_reserve.status_code == 201, in_reserve.text
    owner, tokens = next(iter(held.items()))
    user = (owner, f"{owner}-pw")
    renewed = cluster.next().post(f"/v1/tokens/{tokens[0]}/renew", json={}, headers=basic(user))
    assert (renewed.status_code, renewed.json()["error"]) == (503, "TOKEN_CAPACITY_EXHAUSTED")
    extended = cluster.expire(user, tokens[0], period_ms=5 * 24 * 3_600_000)
    assert (extended.status_code, extended.json()["error"]) == (503, "TOKEN_CAPACITY_EXHAUSTED")
    assert cluster.expire(user, tokens[0], period_ms=60_000).status_code == 200  # shortening: the reserve
    assert cluster.expire(user, tokens[1]).status_code == 200  # deleting: never refused

    reserve = 1  # ... and goes on until its own, higher limit
    while cluster.create(ADMIN).status_code == 201:
        reserve += 1
    assert reserve >= 10
    print(
        f"cluster limit: reached by {principals} principals together ({creates} creates, {per_user} each at "
        f"most); super user: {reserve} creates in its reserve after everyone else got 503"
    )


def _creates_until(policy: CapacityPolicy, purpose: Purpose) -> int:
    tokens = 0
    while (
        policy.full_list(
            {
                ChildList.TOKENS: ListReading(ChildList.TOKENS, tokens),
                ChildList.TOKEN_CHANGES: ListReading(ChildList.TOKEN_CHANGES, tokens),
            },
            CREATE,
            purpose,
        )
        is None
    ):
        tokens += 1
    return tokens


def test_an_expire_with_a_long_period_is_an_extension_capped_at_the_maximum_and_audited_as_one(
    make_cluster: Callable[..., Cluster],
) -> None:
    cluster = make_cluster()
    token = cluster.create(ALICE, maxLifetimeMs=7 * 24 * 3_600_000).json()
    extended = cluster.expire(ALICE, token["tokenId"], period_ms=30 * 24 * 3_600_000)
    assert extended.status_code == 200
    assert extended.json()["expiryTimestamp"] == token["maxTimestamp"]  # never past the maximum
    shortened = cluster.expire(ALICE, token["tokenId"], period_ms=60_000)
    assert shortened.status_code == 200

    events = (
        cluster.replicas[1]
        .get(f"/v1/audit?action=token.expire&outcome=succeeded&tokenId={token['tokenId']}", headers=basic(ADMIN))
        .json()["events"]
    )
    details = sorted((event["details"]["extended"], event["details"]["expiryTimestamp"]) for event in events)
    assert details == [(False, shortened.json()["expiryTimestamp"]), (True, token["maxTimestamp"])]
    print("long-period expire: 200 with expiry = maxTimestamp, audited extended: true; shortening: extended: false")


def test_a_kip373_requesters_writes_are_charged_to_its_share_not_the_owners(
    make_cluster: Callable[..., Cluster], raw_zk: KazooClient
) -> None:
    put_user(raw_zk, "nimbus", "nimbus-pw")
    nimbus = ("nimbus", "nimbus-pw")
    cluster = make_cluster(token_quota_per_owner=0, token_quota_per_requester=0)
    acl = {
        "resourceType": "User",
        "resourceName": "User:alice",
        "patternType": "LITERAL",
        "principal": "User:nimbus",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }
    assert cluster.replicas[0].post("/v1/acls", json=acl, headers=basic(ADMIN)).status_code == 201
    admitted, refusal = _flood_until_refused(cluster, nimbus, owner="User:alice", maxLifetimeMs=1)
    assert admitted == _share_creates()
    _assert_share_refusal(refusal, nimbus)
    assert [cluster.create(ALICE).status_code for _ in range(3)] == [201, 201, 201]
