"""Several real ``kts serve`` replicas on one ZooKeeper: convergence, one sweeper, expiry everywhere."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient

from app.storage.zk.znodes import KtsZNodes, TokenZNode
from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts
from tests.postgres_server import PostgresServer


def _settings(zk_connect: str, **extra: str) -> dict[str, str]:
    return {
        "KTS_ZOOKEEPER_CONNECT": zk_connect,
        "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
        "KTS_SUPER_USERS": "User:admin",
        "KTS_AUTH_FAILURES_MAX": "0",  # polling for a token not yet replicated is a run of failed verifies
        **extra,
    }


def _create(url: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{url}/v1/tokens", json=body, headers=basic(ALICE))
    assert response.status_code == 201, response.text
    return response.json()


def _verifies(url: str, token: dict[str, Any]) -> bool:
    response = httpx.post(
        f"{url}/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=basic(ALICE)
    )
    assert response.status_code in (200, 401)
    return response.status_code == 200


@pytest.fixture
def users(raw_zk: KazooClient) -> None:
    put_user(raw_zk, *ALICE)
    put_user(raw_zk, *ADMIN)


def test_a_token_created_on_one_replica_verifies_on_the_other(
    zk_connect: str, users: None, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    first = start_kts(processes, tmp_path, "replica-a", **_settings(zk_connect))
    second = start_kts(processes, tmp_path, "replica-b", **_settings(zk_connect))
    # How fast is measured by bench/suite.py ("convergence"); here only that it happens, every time.
    for _ in range(30):
        token = _create(first)
        eventually(lambda token=token: _verifies(second, token), timeout_s=5)


def test_an_expired_token_stops_authenticating_on_every_replica_before_any_sweep(
    zk_connect: str, users: None, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    urls = [start_kts(processes, tmp_path, f"replica-{n}", **_settings(zk_connect)) for n in range(2)]
    token = _create(urls[0], maxLifetimeMs=2000)
    eventually(lambda: all(_verifies(url, token) for url in urls))
    bearer = {"Authorization": f"Bearer {token['tokenId']}:{token['hmac']}"}
    assert all(httpx.get(f"{url}/v1/tokens", headers=bearer).status_code == 200 for url in urls)
    while time.time() * 1000 < token["maxTimestamp"]:
        time.sleep(0.01)
    for url in urls:
        assert not _verifies(url, token)
        assert httpx.get(f"{url}/v1/tokens", headers=bearer).status_code == 401
    assert raw_zk.exists(f"{TokenZNode.ROOT}/{token['tokenId']}")  # the hourly sweep has not run: expiry alone did it


def _sweepers(url: str) -> set[str]:
    events = httpx.get(f"{url}/v1/audit?action=token.sweep&limit=1000", headers=basic(ADMIN)).json()["events"]
    return {event["serviceId"] for event in events}


def test_exactly_one_replica_sweeps_and_a_killed_leader_hands_over(
    zk_connect: str,
    users: None,
    raw_zk: KazooClient,
    postgres: PostgresServer,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    interval_ms, session_ms = 300, 4000
    settings = _settings(
        zk_connect,
        KTS_AUDIT_DB_URL=postgres.create_database(),
        KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS=str(interval_ms),
        KTS_ZOOKEEPER_SESSION_TIMEOUT_MS=str(session_ms),
    )
    names = ["replica-0", "replica-1", "replica-2"]
    urls = dict(zip(names, (start_kts(processes, tmp_path, name, **settings) for name in names), strict=True))
    eventually(lambda: len(raw_zk.get_children(KtsZNodes.SWEEPER_ELECTION)) == 3, timeout_s=10)

    doomed = [_create(url, maxLifetimeMs=100) for url in urls.values() for _ in range(3)]
    eventually(lambda: not any(raw_zk.exists(f"{TokenZNode.ROOT}/{t['tokenId']}") for t in doomed), timeout_s=10)
    survivor = urls["replica-0"]
    sweepers = _sweepers(survivor)
    assert len(sweepers) == 1, f"more than one replica swept: {sweepers}"
    (leader,) = sweepers
    events = httpx.get(f"{survivor}/v1/audit?action=token.sweep&limit=1000", headers=basic(ADMIN)).json()["events"]
    assert sorted(e["tokenId"] for e in events) == sorted(t["tokenId"] for t in doomed)
    assert all(e["outcome"] == "succeeded" for e in events)

    processes[names.index(leader)].kill()  # SIGKILL: no goodbye, its session must expire
    others = [name for name in names if name != leader]
    later = [_create(urls[others[0]], maxLifetimeMs=100) for _ in range(3)]
    eventually(
        lambda: not any(raw_zk.exists(f"{TokenZNode.ROOT}/{t['tokenId']}") for t in later),
        timeout_s=(session_ms + interval_ms) / 1000 + 10,
    )
    new_sweepers = _sweepers(urls[others[0]]) - {leader}
    assert len(new_sweepers) == 1 and new_sweepers <= set(others)
