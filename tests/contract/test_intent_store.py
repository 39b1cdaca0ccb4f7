"""The ``IntentStore`` contract (app/service/audit.py), run against every implementation: ZooKeeper (markers
created in a change's own transaction: made here as a token store's transaction makes them), the database's
intent marks (SQLite and a real PostgreSQL) and memory. Markers are found, listed and cleared, one at a time,
many at once or soon; clearing a marker already gone (the reconciler deleted it first) neither fails nor keeps
the others. What one store alone does (ZooKeeper's batched deletions, a database that cannot take a mark) stays
in its own suite."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from sqlalchemy import Engine

from app.domain.clock import SystemClock
from app.storage.memory.intents import MemoryIntentStore
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.zk.connection import ZkConnection
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually
from tests.engines import migrated_database


@dataclass
class Intents:
    """``store``, and ``mark(event_id)``: the marker a change of that pending event leaves."""

    name: str
    store: Any
    mark: Callable[[int], None]


def _zookeeper(request: pytest.FixtureRequest) -> Iterator[Intents]:
    connection = ZkConnection(request.getfixturevalue("zk_connect"), session_timeout_ms=6000)
    connection.start()
    raw_zk: KazooClient = request.getfixturevalue("raw_zk")
    raw_zk.ensure_path(KtsZNodes.AUDIT_INTENTS)
    store = ZkIntentStore(connection)
    yield Intents("zookeeper", store, lambda event_id: raw_zk.create(KtsZNodes.audit_intent(event_id), b""))
    connection.stop()


def _database(request: pytest.FixtureRequest, url: str) -> Iterator[Intents]:
    engines: Callable[[str], Engine] = request.getfixturevalue("engines")
    store = SqlIntentMarks(engines(url), clock=SystemClock())
    yield Intents(url.partition(":")[0], store, store.mark)


@pytest.fixture(params=["zookeeper", "sqlite", "postgresql", "memory"])
def intents(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Intents]:
    if request.param == "zookeeper":
        yield from _zookeeper(request)
    elif request.param in ("sqlite", "postgresql"):
        yield from _database(request, migrated_database(request, tmp_path, request.param))
    else:
        store = MemoryIntentStore()
        yield Intents("memory", store, store.mark)


def test_markers_are_found_listed_and_cleared(intents: Intents) -> None:
    store = intents.store
    assert store.list() == [] and store.existing([1, 2]) == set()
    for event_id in (3, 1, 2, 4):
        intents.mark(event_id)

    assert store.list() == [1, 2, 3, 4]
    assert store.existing([1, 3, 9]) == {1, 3}
    store.clear(1)
    store.clear_many([2, 9])  # 9 was never marked
    assert store.list() == [3, 4]
    assert store.existing([1, 2, 3, 4]) == {3, 4}


def test_a_marker_already_gone_does_not_keep_the_others(intents: Intents) -> None:
    for event_id in range(1, 51):
        intents.mark(event_id)
    intents.store.clear(25)  # the reconciler deleted it first

    intents.store.clear_many(list(range(1, 51)))
    intents.store.clear(25)

    assert intents.store.list() == []


def test_markers_cleared_soon_are_deleted(intents: Intents) -> None:
    for event_id in range(1, 501):
        intents.mark(event_id)

    intents.store.clear_soon(list(range(1, 251)))
    intents.store.clear_soon(list(range(251, 501)))

    eventually(lambda: intents.store.list() == [])
