"""The audit reconciler on a real ZooKeeper and SQLite: many pending events (a sweeper killed mid-batch)
are settled in batches by their intent markers, one per event or one per batch of changes (a batch's events may
fall into two of the reconciler's rounds, and need not be consecutive), and the markers of applied changes are
removed once all their events are settled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext
from app.domain.clock import SystemClock
from app.service.audit import RECONCILE_BATCH, AuditReconciler
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.transaction import ChangeTransaction
from app.storage.zk.znodes import KtsZNodes


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkConnection]:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield connection
    connection.stop()


def test_settles_more_pending_events_than_one_batch_by_their_markers(
    zk: ZkConnection, raw_zk: KazooClient, tmp_path: Path
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'audit.db'}")
    migrations.upgrade(engine)
    audit_log = SqlAuditLog(engine, service_id="crashed", clock=SystemClock())
    intents = ZkIntentStore(zk)
    count = RECONCILE_BATCH + 250
    events = [AuditEvent(Action.TOKEN_DELETE_BY_SWEEP, Outcome.PENDING, token_id=f"T{n}") for n in range(count)]
    ids = audit_log.append_many(events, RequestContext())
    applied = set(ids[::2])  # the sweep's transaction landed for half of them
    for event_id in applied:
        raw_zk.create(KtsZNodes.audit_intent(event_id), b"")

    settled = AuditReconciler(audit_log, intents, clock=SystemClock(), service_id="crashed").reconcile(at_start=True)

    assert settled == count
    outcomes = {event.id: event.outcome for event in audit_log.query(EventQuery(limit=count))}
    assert outcomes == {event_id: "succeeded" if event_id in applied else "failed" for event_id in ids}
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == []
    engine.dispose()


def _mark_batch(zk: ZkConnection, event_ids: list[int]) -> None:
    """The marker a token store's batch transaction creates for these events."""
    transaction = ChangeTransaction(zk)
    transaction.mark_intents(event_ids)
    transaction.commit(Subject("a batch", "batch"))


def _pending_sweep(audit_log: SqlAuditLog, count: int) -> list[int]:
    events = [AuditEvent(Action.TOKEN_DELETE_BY_SWEEP, Outcome.PENDING, token_id=f"T{n}") for n in range(count)]
    return audit_log.append_many(events, RequestContext())


def test_settles_the_events_of_batch_markers_even_across_its_rounds(
    zk: ZkConnection, raw_zk: KazooClient, tmp_path: Path
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'audit.db'}")
    migrations.upgrade(engine)
    audit_log = SqlAuditLog(engine, service_id="crashed", clock=SystemClock())
    ids = _pending_sweep(audit_log, RECONCILE_BATCH + 250)
    straddling = ids[RECONCILE_BATCH - 300 : RECONCILE_BATCH + 200]  # its first events in one round, the rest next
    sparse = ids[RECONCILE_BATCH + 210 : RECONCILE_BATCH + 250 : 2]  # ids of others' events between its own
    single = ids[RECONCILE_BATCH + 211]  # between two of the sparse batch's own, with a marker of its own
    for batch in (ids[:500], straddling, sparse):
        _mark_batch(zk, batch)
    raw_zk.create(KtsZNodes.audit_intent(single), b"")
    applied = {*ids[:500], *straddling, *sparse, single}

    reconciler = AuditReconciler(audit_log, ZkIntentStore(zk), clock=SystemClock(), service_id="crashed")
    settled = reconciler.reconcile(at_start=True)

    assert settled == len(ids)
    outcomes = {event.id: event.outcome for event in audit_log.query(EventQuery(limit=len(ids)))}
    assert outcomes == {event_id: "succeeded" if event_id in applied else "failed" for event_id in ids}
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == []
    engine.dispose()


def test_a_batch_marker_stays_while_any_of_its_events_is_pending(
    zk: ZkConnection, raw_zk: KazooClient, tmp_path: Path
) -> None:
    """Another replica's batch, younger than the grace period: its events may still be settled by their sweep, and
    the reconciler settles none of them, so their marker must stay. Once they are settled, the marker goes."""
    engine = make_engine(f"sqlite:///{tmp_path / 'audit.db'}")
    migrations.upgrade(engine)
    audit_log = SqlAuditLog(engine, service_id="sweeping", clock=SystemClock())
    ids = _pending_sweep(audit_log, 20)
    _mark_batch(zk, ids)
    reconciler = AuditReconciler(audit_log, ZkIntentStore(zk), clock=SystemClock(), service_id="another")

    assert reconciler.reconcile() == 0
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == [f"{ids[0]}-{ids[-1]}"]

    audit_log.append_many([], RequestContext(), succeeded=ids[:10])  # half settled: the marker still proves the rest
    assert reconciler.reconcile() == 0
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == [f"{ids[0]}-{ids[-1]}"]

    audit_log.append_many([], RequestContext(), succeeded=ids[10:])  # settled, but its sweep lost the marker's delete
    reconciler.reconcile()
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == []
    engine.dispose()
