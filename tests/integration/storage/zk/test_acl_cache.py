"""AclCache on a real ZooKeeper: loads everything, follows notifications, serves checks from memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.domain.acl import AccessControlEntry, AclAuthorizer, PatternType, ResourcePattern
from app.domain.authorization import Caller, Operation, ResourceType
from app.domain.principal import KafkaPrincipal
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.connection import ZkConnection
from tests.api.helpers import eventually, kafka_acls_sh_writes

GRANT = {"principal": "User:nimbus", "permissionType": "Allow", "operation": "CreateTokens", "host": "*"}
NIMBUS = Caller(KafkaPrincipal.user("nimbus"), host="127.0.0.1")


def _allowed(cache: AclCache, name: str = "User:joe") -> bool:
    authorizer = AclAuthorizer([], cache.snapshot)
    return authorizer.authorize(NIMBUS, Operation.CREATE_TOKENS, ResourceType.USER, name)


@pytest.fixture
def cache(zk_connect: str, raw_zk: KazooClient) -> Iterator[AclCache]:
    kafka_acls_sh_writes(raw_zk, "User", "User:existing", [GRANT])
    zk = ZkConnection(zk_connect, session_timeout_ms=6000)
    zk.start()
    acl_cache = AclCache(zk, ZkAclStore(zk))
    acl_cache.start()
    yield acl_cache
    acl_cache.stop()
    zk.stop()


def test_loads_acls_present_at_start(cache: AclCache) -> None:
    assert cache.loaded
    assert _allowed(cache, "User:existing")
    assert not _allowed(cache, "User:joe")


def test_follows_literal_and_prefixed_notifications(cache: AclCache, raw_zk: KazooClient) -> None:
    kafka_acls_sh_writes(raw_zk, "User", "User:joe", [GRANT])
    eventually(lambda: _allowed(cache))
    raw_zk.create("/kafka-acl-extended/prefixed/User/User:etl-", b'{"version":1,"acls":[' + _json(GRANT) + b"]}")
    raw_zk.create(
        "/kafka-acl-extended-changes/acl_changes_",
        b'{"version":1,"resourceType":"USER","name":"User:etl-","patternType":"PREFIXED"}',
        sequence=True,
    )
    eventually(lambda: _allowed(cache, "User:etl-nightly"))
    raw_zk.delete("/kafka-acl/User/User:joe")
    raw_zk.create("/kafka-acl-changes/acl_changes_", b"USER:User:joe", sequence=True)
    eventually(lambda: not _allowed(cache))


def test_garbage_notifications_and_znodes_do_not_stop_the_cache(cache: AclCache, raw_zk: KazooClient) -> None:
    raw_zk.create("/kafka-acl-changes/acl_changes_", b"no-colon-here", sequence=True)
    kafka_acls_sh_writes(raw_zk, "User", "User:broken", [])
    raw_zk.set("/kafka-acl/User/User:broken", b"{not json")
    raw_zk.create("/kafka-acl-changes/acl_changes_", b"USER:User:broken", sequence=True)
    kafka_acls_sh_writes(raw_zk, "User", "User:joe", [GRANT])
    eventually(lambda: _allowed(cache))


def test_own_writes_are_visible_at_once(cache: AclCache, zk_connect: str) -> None:
    zk = ZkConnection(zk_connect, session_timeout_ms=6000)
    zk.start()
    store = ZkAclStore(zk)
    pattern = ResourcePattern("User", "User:joe", PatternType.LITERAL)
    store.change(pattern, lambda entries: entries | {AccessControlEntry("User:nimbus", "*", "CreateTokens", "Allow")})
    cache.refresh(pattern)
    assert _allowed(cache)
    zk.stop()


def test_checks_are_answered_from_memory_when_zookeeper_is_gone(tmp_path: Path) -> None:
    with EmbeddedZooKeeper(tmp_path / "zk") as zookeeper:
        raw = KazooClient(hosts=zookeeper.connect_string)
        raw.start(10)
        kafka_acls_sh_writes(raw, "User", "User:joe", [GRANT])
        raw.stop()
        zk = ZkConnection(zookeeper.connect_string, session_timeout_ms=4000)
        zk.start()
        acl_cache = AclCache(zk, ZkAclStore(zk))
        acl_cache.start()
        try:
            zookeeper.kill()
            eventually(lambda: not zk.connected, timeout_s=10)
            assert _allowed(acl_cache)  # no ZooKeeper read on the authorization path
            assert not _allowed(acl_cache, "User:mary")
        finally:
            acl_cache.stop()
            zk.stop()


def _json(entry: dict[str, str]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode()


@pytest.mark.parametrize("resource_type", list(ResourceType))
@pytest.mark.parametrize("pattern_type", list(PatternType))
def test_a_brokers_notification_refreshes_every_resource_type(
    cache: AclCache, raw_zk: KazooClient, resource_type: ResourceType, pattern_type: PatternType
) -> None:
    """The ACLs in the CamelCase folder, the notification naming the enum, both as a 3.9 broker writes them."""
    entry = GRANT | {"operation": "Describe"}
    pattern = ResourcePattern(resource_type.value, f"{resource_type.value.lower()}-1", pattern_type)
    root = "/kafka-acl" if pattern_type is PatternType.LITERAL else "/kafka-acl-extended/prefixed"
    raw_zk.ensure_path(f"{root}/{resource_type.value}")
    raw_zk.create(f"{root}/{resource_type.value}/{pattern.name}", b'{"version":1,"acls":[' + _json(entry) + b"]}")
    enum_name = {"TransactionalId": "TRANSACTIONAL_ID", "DelegationToken": "DELEGATION_TOKEN"}.get(
        resource_type.value, resource_type.value.upper()
    )
    if pattern_type is PatternType.LITERAL:
        raw_zk.create("/kafka-acl-changes/acl_changes_", f"{enum_name}:{pattern.name}".encode(), sequence=True)
    else:
        change = {"version": 1, "resourceType": enum_name, "name": pattern.name, "patternType": "PREFIXED"}
        raw_zk.create("/kafka-acl-extended-changes/acl_changes_", json.dumps(change).encode(), sequence=True)
    eventually(lambda: bool(cache.snapshot().entries(pattern)), timeout_s=10)
