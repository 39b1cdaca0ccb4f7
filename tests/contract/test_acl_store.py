"""The ``AclStore`` and ``AclView`` contract (app/service/ports.py), run against ZooKeeper (a real server: the
store and the cache brokers' notifications feed), the Kafka protocol (the real KRaft broker: ACLs created and
deleted by the controller, the cache reading them whole) and memory. A change answers the entries before and after; the
writing replica's view holds it once refreshed, another replica's soon after; an edit that changes nothing
writes nothing; a resource left without entries is gone; literal and prefixed patterns are apart. What one store
alone does (the znodes and notifications brokers read) stays in its own suite."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.domain.acl import AccessControlEntry, AclBinding, PatternType, ResourcePattern
from app.storage.kafka.acls import KafkaAclCache, KafkaAcls, KafkaAclStore
from app.storage.memory.acls import MemoryAclStore, MemoryAclView
from app.storage.memory.intents import MemoryIntentStore
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.connection import ZkConnection
from tests.api.helpers import eventually

# Names of this module's own: the KRaft broker is the whole session's.
RUN = uuid.uuid4().hex[:8]
JOE = ResourcePattern("User", f"User:joe-{RUN}")
ETL = ResourcePattern("User", f"User:etl-{RUN}-", PatternType.PREFIXED)
GRANT = AccessControlEntry(f"User:nimbus-{RUN}", "*", "CreateTokens", "Allow")
DESCRIBE = AccessControlEntry(f"User:nimbus-{RUN}", "*", "DescribeTokens", "Allow")


@dataclass
class Acls:
    """``store`` and its replica's ``view``; ``other``: another replica's view."""

    name: str
    store: Any
    view: Any
    other: Any


@pytest.fixture(params=["zookeeper", "kraft", "memory"])
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
    elif request.param == "kraft":
        clusters: Callable[[], Any] = request.getfixturevalue("kraft_clusters")
        rpcs = [KafkaAcls(clusters().wire) for _ in range(2)]
        caches = [KafkaAclCache(rpc, interval_ms=500) for rpc in rpcs]
        for cache in caches:
            cache.start()
        store = KafkaAclStore(rpcs[0], caches[0], MemoryIntentStore())
        yield Acls("kraft", store, caches[0], caches[1])
        _clean(store)
        for cache in caches:
            cache.stop()
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

    acls.view.refresh(JOE)  # what the service does after its own writes
    acls.view.refresh(ETL)
    assert _ours(acls.view) == [AclBinding(JOE, GRANT)]


def test_a_resource_left_without_entries_is_gone(acls: Acls) -> None:
    acls.store.change(JOE, lambda entries: entries | {GRANT})
    acls.store.change(ETL, lambda entries: entries | {GRANT})

    assert acls.store.change(JOE, lambda entries: frozenset()) == (frozenset({GRANT}), frozenset())

    acls.view.refresh(JOE)
    acls.view.refresh(ETL)
    assert _ours(acls.view) == [AclBinding(ETL, GRANT)]
    eventually(lambda: _ours(acls.other) == [AclBinding(ETL, GRANT)])


def test_literal_and_prefixed_patterns_are_apart(acls: Acls) -> None:
    literal = ResourcePattern("User", ETL.name)
    acls.store.change(ETL, lambda entries: entries | {GRANT})

    acls.view.refresh(literal)
    acls.view.refresh(ETL)
    assert acls.view.snapshot().entries(literal) == frozenset()
    assert acls.view.snapshot().entries(ETL) == {GRANT}
    # Other tests on the session's KRaft broker may grant on the wildcard or on a shorter prefix: only this
    # module's own entries are counted.
    matched = acls.view.snapshot().matching("User", ETL.name + "nightly")
    assert [entry.operation for entry in matched if RUN in entry.principal] == ["CreateTokens"]


def _ours(view: Any) -> list[AclBinding]:
    """The bindings of this module's own resources (a broker's other ACLs left out)."""
    return [binding for binding in view.snapshot().bindings() if RUN in binding.pattern.name]


def _clean(store: Any) -> None:
    for pattern in (JOE, ETL, ResourcePattern("User", ETL.name)):
        store.change(pattern, lambda entries: frozenset())
