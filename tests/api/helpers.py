"""Helpers for API tests: snapshots of the tokens (the znodes, or what the API describes), to prove a refused request
changed nothing."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from app.storage.zk.znodes.acls import java_enum_name

# kts's super user on the edge tests' backend (tests/api/conftest.py's ADMIN, edge_client)
SUPER_USER = {"Authorization": "Basic " + base64.b64encode(b"admin:admin-secret").decode()}


def token_state(raw_zk: KazooClient) -> dict[str, object]:
    """Every token znode with its data and version, and the notification names."""
    tokens = {}
    for token_id in raw_zk.get_children(TokenZNode.ROOT):
        data, stat = raw_zk.get(f"{TokenZNode.ROOT}/{token_id}")
        tokens[token_id] = (data, stat.version)
    return {"tokens": tokens, "changes": sorted(raw_zk.get_children(TokenChangeZNode.ROOT))}


def notifications(raw_zk: KazooClient) -> list[bytes]:
    return [
        raw_zk.get(f"{TokenChangeZNode.ROOT}/{name}")[0] for name in sorted(raw_zk.get_children(TokenChangeZNode.ROOT))
    ]


def eventually(check: Callable[[], bool], timeout_s: float = 30.0) -> float:
    """Wait until ``check()`` holds; returns the seconds it took. Fails the test on time-out, which is generous:
    a passing check returns at once, and a loaded 2-core machine can stall a follower for seconds."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(0.01)
    return time.monotonic() - started


def broker_acl_bytes(acls: list[dict[str, str]]) -> bytes:
    """An ACL znode's data byte for byte as a 3.9 broker writes it, keys in its (Java HashMap's) order."""
    entries = [{key: acl[key] for key in ("principal", "permissionType", "host", "operation")} for acl in acls]
    return json.dumps({"acls": entries, "version": 1}, separators=(",", ":")).encode()


def scala_broker_acl_bytes(acls: list[dict[str, str]]) -> bytes:
    """The same data as older 3.x brokers write it (3.3's Scala authorizer: keys in the order it puts them, the
    version first): the same JSON, other bytes, read alike by every broker and by kts (the release matrix)."""
    entries = [{key: acl[key] for key in ("principal", "permissionType", "operation", "host")} for acl in acls]
    return json.dumps({"version": 1, "acls": entries}, separators=(",", ":")).encode()


def kafka_acls_sh_writes(raw_zk: KazooClient, resource_type: str, name: str, acls: list[dict[str, str]]) -> None:
    """Write a literal ACL znode and its change notification exactly as a 3.x broker's AclAuthorizer does for
    kafka-acls.sh: the notification names the type as Java's enum does (``USER:User:joe``); tests/e2e/kafka/
    checks these bytes against a real broker's."""
    path = f"/kafka-acl/{resource_type}/{name}"
    data = broker_acl_bytes(acls)
    raw_zk.ensure_path(f"/kafka-acl/{resource_type}")
    if raw_zk.exists(path):
        raw_zk.set(path, data)
    else:
        raw_zk.create(path, data)
    raw_zk.ensure_path("/kafka-acl-changes")
    raw_zk.create("/kafka-acl-changes/acl_changes_", f"{java_enum_name(resource_type)}:{name}".encode(), sequence=True)


def broker_writes_token(raw_zk: KazooClient, token_id: str, data: bytes) -> None:
    """Write a token znode and its change notification as a Kafka broker does."""
    raw_zk.create(f"{TokenZNode.ROOT}/{token_id}", data)
    raw_zk.create(f"{TokenChangeZNode.ROOT}/token_change_", token_id.encode(), sequence=True)


def tokens_seen(client: TestClient) -> list[dict[str, object]]:
    """Every token the super user of ``edge_client`` can describe, with all its fields: on whichever backend it runs,
    what a refused request must leave as it was (``token_state`` reads ZooKeeper's znodes, notifications included)."""
    response = client.get("/v1/tokens", params={"limit": 1000}, headers=SUPER_USER)
    assert response.status_code == 200, response.text
    return list(response.json()["tokens"])
