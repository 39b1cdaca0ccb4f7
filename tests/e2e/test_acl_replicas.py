"""ACL changes made through one replica, or as raw znodes, take effect on another replica within a second."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ADMIN, basic, put_user
from tests.api.helpers import eventually, kafka_acls_sh_writes
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready

NIMBUS = ("nimbus", "nimbus-pw")


@pytest.fixture
def replicas(zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path) -> list[str]:
    for user in (ADMIN, NIMBUS):
        put_user(raw_zk, *user)
    urls = []
    for index in range(2):
        port = free_port()
        process = subprocess.Popen(
            [*KTS, "serve"],
            cwd=ROOT,
            env=kts_env(
                KTS_ZOOKEEPER_CONNECT=zk_connect,
                KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
                KTS_SUPER_USERS="User:admin",
                KTS_HTTP_LISTENERS=f"http://127.0.0.1:{port}",
                KTS_SERVICE_ID=f"replica-{index}",
            ),
            stdout=(tmp_path / f"replica-{index}.log").open("w"),
            stderr=subprocess.STDOUT,
            text=True,
        )
        processes.append(process)
        urls.append(f"http://127.0.0.1:{port}")
    for url, process in zip(urls, processes, strict=True):
        wait_ready(url, process)
    return urls


def _may_create_for_joe(url: str) -> Callable[[], bool]:
    def check() -> bool:
        response = httpx.post(f"{url}/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS))
        assert response.status_code in (201, 403)
        return response.status_code == 201

    return check


def _acl(**fields: str) -> dict[str, str]:
    return {
        "resourceType": "User",
        "resourceName": "User:joe",
        "patternType": "LITERAL",
        "principal": "User:nimbus",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    } | fields


def test_acl_added_on_one_replica_applies_on_the_other_within_a_second(replicas: list[str]) -> None:
    first, second = replicas
    assert not _may_create_for_joe(second)()
    assert httpx.post(f"{first}/v1/acls", json=_acl(), headers=basic(ADMIN)).status_code == 201
    took = eventually(_may_create_for_joe(second), timeout_s=1.0)
    print(f"ACL grant visible on the other replica after {took * 1000:.0f} ms")
    assert httpx.post(f"{first}/v1/acls", json=_acl(permissionType="Deny"), headers=basic(ADMIN)).status_code == 201
    eventually(lambda: not _may_create_for_joe(second)(), timeout_s=1.0)


def test_raw_znode_acls_apply_on_every_replica_within_a_second(replicas: list[str], raw_zk: KazooClient) -> None:
    entry = {"principal": "User:nimbus", "permissionType": "Allow", "operation": "CreateTokens", "host": "*"}
    kafka_acls_sh_writes(raw_zk, "User", "User:joe", [entry])
    for url in replicas:
        eventually(_may_create_for_joe(url), timeout_s=1.0)
    kafka_acls_sh_writes(raw_zk, "User", "User:joe", [])
    for url in replicas:
        eventually(lambda url=url: not _may_create_for_joe(url)(), timeout_s=1.0)


def test_host_based_acls_match_the_real_client_address(replicas: list[str]) -> None:
    first, second = replicas
    httpx.post(f"{first}/v1/acls", json=_acl(host="192.0.2.10"), headers=basic(ADMIN))
    assert not _may_create_for_joe(second)()
    httpx.post(f"{first}/v1/acls", json=_acl(host="127.0.0.1"), headers=basic(ADMIN))
    eventually(_may_create_for_joe(second), timeout_s=1.0)
