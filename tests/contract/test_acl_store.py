"""The ``AclStore`` and ``AclView`` contract (app/service/ports.py), run against ZooKeeper (a real server: the
store and the cache brokers' notifications feed) and memory. A change answers the entries before and after; the
writing replica's view holds it once refreshed, another replica's soon after; an edit that changes nothing
writes nothing; a resource left without entries is gone; literal and prefixed patterns are apart. What one store
alone does (the znodes and notifications brokers read) stays in its own suite."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.domain.acl import AccessControlEntry, AclBinding, PatternType, ResourcePattern
from app.storage.memory.acls import MemoryAclStore, MemoryAclView
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.connection import ZkConnection
from tests.api.helpers import eventually

JOE = ResourcePattern("User", "User:joe")
ETL = ResourcePattern("User", "User:etl-", PatternType.PREFIXED)
GRANT = AccessControlEntry("User:nimbus", "*", "CreateTokens", "Allow")
DESCRIBE = AccessControlEntry("User:nimbus", "*", "DescribeTokens", "Allow")


@dataclass
class Acls:
    """``store`` and its replica's ``view``; ``other``: another replica's view."""

    name: str
    store: Any
    view: Any
    other: Any


@pytest.fixture(params=["zookeeper", "memory"])
def acls(request: pytest.FixtureRequest) -> Iterator[Acls]:
    if request.param == "zookeeper":
        connect: str = request.getfixturevalue("zk_connect")
        connections = [ZkConnection(connect, session_timeout_ms=6000) for _ in range(2)]
        for connection in connections:
            connection.start()
        store = ZkAclStore(connections[0])
        caches = [AclCache(connection, ZkAclStore(connection)) for connection in connections]
        for cache in caches:
            cache.start()
        yield Acls("zookeeper", store, caches[0], caches[1])
        for cache in caches:
            cache.stop()
        for connection in connections:
            connection.stop()
    else:
        memory = MemoryAclStore()
        yield Acls("memory", memory, MemoryAclView(memory), MemoryAclView(memory))


def test_a_change_answers_before_and_after_and_every_replica_sees_it(acls: Acls) -> None:
    before, after = acls.store.change(JOE, lambda entries: entries | {GRANT})

    assert (before, after) == (frozenset(), frozenset({GRANT}))
    acls.view.refresh(JOE)  # what the service does after its own write
    assert acls.view.snapshot().entries(JOE) == {GRANT}
    eventually(lambda: acls.other.snapshot().entries(JOE) == {GRANT})
    assert acls.store.change(JOE, lambda entries: entries | {DESCRIBE}) == (
        frozenset({GRANT}),
        frozenset({GRANT, DESCRIBE}),
    )


def test_an_edit_that_changes_nothing_answers_the_entries_as_they_are(acls: Acls) -> None:
    acls.store.change(JOE, lambda entries: entries | {GRANT})

    assert acls.store.change(JOE, lambda entries: entries) == (frozenset({GRANT}), frozenset({GRANT}))
    assert acls.store.change(ETL, lambda entries: entries - {GRANT}) == (frozenset(), frozenset())

    acls.view.refresh(ETL)
    assert acls.view.snapshot().bindings() == [AclBinding(JOE, GRANT)]


def test_a_resource_left_without_entries_is_gone(acls: Acls) -> None:
    acls.store.change(JOE, lambda entries: entries | {GRANT})
    acls.store.change(ETL, lambda entries: entries | {GRANT})

    assert acls.store.change(JOE, lambda entries: frozenset()) == (frozenset({GRANT}), frozenset())

    acls.view.refresh(JOE)
    acls.view.refresh(ETL)
    assert acls.view.snapshot().bindings() == [AclBinding(ETL, GRANT)]
    eventually(lambda: acls.other.snapshot().bindings() == [AclBinding(ETL, GRANT)])


def test_literal_and_prefixed_patterns_are_apart(acls: Acls) -> None:
    literal = ResourcePattern("User", "User:etl-")
    acls.store.change(ETL, lambda entries: entries | {GRANT})

    acls.view.refresh(literal)
    acls.view.refresh(ETL)
    assert acls.view.snapshot().entries(literal) == frozenset()
    assert acls.view.snapshot().entries(ETL) == {GRANT}
    assert [entry.operation for entry in acls.view.snapshot().matching("User", "User:etl-nightly")] == ["CreateTokens"]
