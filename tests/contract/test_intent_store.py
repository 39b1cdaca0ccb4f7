"""The ``IntentStore`` contract (app/service/audit.py), run against every implementation: ZooKeeper (markers
created in a change's own transaction: made here as a token store's transaction makes them), the database's
intent marks (SQLite and a real PostgreSQL) and memory. Markers are found, listed and cleared, one at a time,
many at once or soon; clearing a marker already gone (the reconciler deleted it first) neither fails nor keeps
the others. A batch changed in one transaction is marked as a batch (ZooKeeper: one marker for all its events;
the others: one mark each), found by any of its events and cleared as one. What one store alone does (ZooKeeper's
batched deletions, a database that cannot take a mark) stays in its own suite."""

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
from app.storage.zk.errors import Subject
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.transaction import ChangeTransaction
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually
from tests.engines import migrated_database


@dataclass
class Intents:
    """``store``, ``mark(event_id)``: the marker a change of that pending event leaves, and ``mark_batch(event_ids)``:
    the marker(s) a batch of changes made in one transaction leaves."""

    name: str
    store: Any
    mark: Callable[[int], None]
    mark_batch: Callable[[list[int]], None]


def _zookeeper(request: pytest.FixtureRequest) -> Iterator[Intents]:
    connection = ZkConnection(request.getfixturevalue("zk_connect"), session_timeout_ms=6000)
    connection.start()
    raw_zk: KazooClient = request.getfixturevalue("raw_zk")
    raw_zk.ensure_path(KtsZNodes.AUDIT_INTENTS)
    store = ZkIntentStore(connection)

    def mark_batch(event_ids: list[int]) -> None:  # as a token store's batch transaction marks it
        transaction = ChangeTransaction(connection)
        transaction.mark_intents(event_ids)
        transaction.commit(Subject("a batch", "batch"))

    yield Intents("zookeeper", store, lambda event_id: raw_zk.create(KtsZNodes.audit_intent(event_id), b""), mark_batch)
    connection.stop()


def _one_by_one(mark: Callable[[int], None]) -> Callable[[list[int]], None]:
    def mark_batch(event_ids: list[int]) -> None:
        for event_id in event_ids:
            mark(event_id)

    return mark_batch


def _database(request: pytest.FixtureRequest, url: str) -> Iterator[Intents]:
    engines: Callable[[str], Engine] = request.getfixturevalue("engines")
    store = SqlIntentMarks(engines(url), clock=SystemClock())
    yield Intents(url.partition(":")[0], store, store.mark, _one_by_one(store.mark))


@pytest.fixture(params=["zookeeper", "sqlite", "postgresql", "memory"])
def intents(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Intents]:
    if request.param == "zookeeper":
        yield from _zookeeper(request)
    elif request.param in ("sqlite", "postgresql"):
        yield from _database(request, migrated_database(request, tmp_path, request.param))
    else:
        store = MemoryIntentStore()
        yield Intents("memory", store, store.mark, _one_by_one(store.mark))


def test_markers_are_found_listed_and_cleared(intents: Intents) -> None:
    store = intents.store
    assert store.marks() == [] and store.existing([1, 2]) == set()
    for event_id in (3, 1, 2, 4):
        intents.mark(event_id)

    assert store.marks() == [[1], [2], [3], [4]]
    assert store.existing([1, 3, 9]) == {1, 3}
    store.clear(1)
    store.clear_many([2, 9])  # 9 was never marked
    assert store.marks() == [[3], [4]]
    assert store.existing([1, 2, 3, 4]) == {3, 4}


def test_a_marker_already_gone_does_not_keep_the_others(intents: Intents) -> None:
    for event_id in range(1, 51):
        intents.mark(event_id)
    intents.store.clear(25)  # the reconciler deleted it first

    intents.store.clear_many(list(range(1, 51)))
    intents.store.clear(25)

    assert intents.store.marks() == []


def test_markers_cleared_soon_are_deleted(intents: Intents) -> None:
    for event_id in range(1, 501):
        intents.mark(event_id)

    intents.store.clear_soon(list(range(1, 251)))
    intents.store.clear_soon(list(range(251, 501)))

    eventually(lambda: intents.store.marks() == [])


def _marked(store: Any) -> list[int]:
    return sorted(event_id for mark in store.marks() for event_id in mark)


def test_a_batch_is_found_by_any_of_its_events_and_cleared_whole(intents: Intents) -> None:
    store = intents.store
    batch = [10, 12, 15]  # not consecutive: on PostgreSQL another replica's events take ids in between
    intents.mark_batch(batch)
    intents.mark(11)

    assert _marked(store) == [10, 11, 12, 15]
    assert store.existing([11, 12, 15, 20]) == {11, 12, 15}
    assert store.existing([15]) == {15}  # the batch's first event asked in an earlier round (the reconciler's)
    assert store.existing([13, 14]) == set()
    store.clear_batch(batch)
    store.clear_batch(batch)  # gone already: nothing to do

    assert store.marks() == [[11]]
    assert store.existing([10, 11, 12, 15]) == {11}


def test_a_batch_cleared_soon_is_deleted(intents: Intents) -> None:
    batches = [list(range(first, first + 500)) for first in range(1, 2001, 500)]
    for batch in batches:
        intents.mark_batch(batch)
    intents.mark(5000)

    for batch in batches:
        intents.store.clear_batch_soon(batch)
    intents.store.clear_soon([5000])

    eventually(lambda: intents.store.marks() == [])


def test_a_batch_of_one_event_is_marked_and_cleared_as_one_event(intents: Intents) -> None:
    intents.mark_batch([7])

    assert intents.store.marks() == [[7]]
    intents.store.clear_batch([7])
    assert intents.store.marks() == []
