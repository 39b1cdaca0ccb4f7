"""The audit reconciler on a real ZooKeeper and SQLite: many pending events (a sweeper killed mid-batch)
are settled in batches by their intent markers, and the markers of applied changes are removed."""

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
from app.storage.zk.intent_store import ZkIntentStore
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
