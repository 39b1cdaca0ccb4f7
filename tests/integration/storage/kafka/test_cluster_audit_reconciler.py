"""The audit protocol without intent markers, on real SQLite and PostgreSQL, with replicas killed by SIGKILL at
every point of a create (tests/integration/storage/kafka/create_process.py) and a fake in-process cluster standing
in for the controller (tests/fake_cluster.py; the same scenario runs on the real KRaft broker once the
Kafka-protocol adapter is wired, tests/kafka/). Then two reconcilers, as two replicas during a hand-over,
settle everything at once: no event stays pending, every token kts's principal holds on the cluster has
exactly one succeeded create event naming it, and who asked for it is recorded."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from app.domain.audit import Action, EventQuery, StoredEvent
from app.domain.clock import SystemClock
from app.domain.principal import KafkaPrincipal
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.kafka.cluster_audit import ClusterAuditReconciler, Reconciliation
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.token_requesters import SqlTokenRequesters
from tests.fake_cluster import DAY_MS, FakeCluster

ROOT = Path(__file__).resolve().parents[4]
KTS = KafkaPrincipal.user("kts")
KILL_POINTS = ("before-pending", "before-rpc", "after-rpc", "after-record", "none")


@pytest.fixture
def engine(any_audit_db: str) -> Iterator[Engine]:
    made = make_engine(any_audit_db)
    migrations.upgrade(made)
    yield made
    made.dispose()


def _reconciler(url: str, cluster: FakeCluster, service_id: str) -> tuple[ClusterAuditReconciler, Engine]:
    engine = make_engine(url)
    clock = SystemClock()
    audit_log = SqlAuditLog(engine, service_id=service_id, clock=clock)
    ledger = SqlTokenRequesters(engine, audit_log, service_id=service_id)
    marks = SqlIntentMarks(engine, clock=clock)
    return (
        ClusterAuditReconciler(
            audit_log,
            ledger,
            cluster,
            marks,
            clock=clock,
            own_principal=lambda: KTS,
            default_renew_ms=DAY_MS,
            grace_ms=0,
        ),
        engine,
    )


def test_every_kill_point_of_a_create_settles_consistently(any_audit_db: str, engine: Engine, tmp_path: Path) -> None:
    cluster = FakeCluster(tmp_path / "cluster.db")
    for point in KILL_POINTS:
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.integration.storage.kafka.create_process",
                any_audit_db,
                str(cluster.path),
                f"User:{point}",
                point,
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=120,
        )
        assert child.returncode == (0 if point == "none" else -9), child.stderr.decode()
    # Someone used kts's own credentials with kafka-delegation-tokens.sh; and alice made one of her own.
    by_hand = cluster.create(requester=KTS, owner=KafkaPrincipal.user("by-hand"), now_ms=SystemClock().now_ms() - 1)
    cluster.create(requester=KafkaPrincipal.user("alice"), owner=KafkaPrincipal.user("alice"))
    audit_log = SqlAuditLog(engine, service_id="test", clock=SystemClock())
    assert {event.owner for event in _events(audit_log) if event.outcome == "pending"} == {
        "User:before-rpc",
        "User:after-rpc",
        "User:after-record",
    }

    results: list[Reconciliation] = []
    engines: list[Engine] = []

    failures: list[BaseException] = []

    def replica(service_id: str) -> None:
        reconciler, made = _reconciler(any_audit_db, cluster, service_id)
        engines.append(made)
        try:
            results.append(reconciler.reconcile())
        except BaseException as exc:  # reported below, not lost in the thread
            failures.append(exc)

    passes = [threading.Thread(target=replica, args=(f"kts-{n}",)) for n in range(2)]
    for thread in passes:
        thread.start()
    for thread in passes:
        thread.join(timeout=120)
    for made in engines:
        made.dispose()
    assert failures == []

    events = _events(audit_log)
    assert [event for event in events if event.outcome == "pending"] == []
    by_owner = {event.owner: event for event in events}
    assert "User:before-pending" not in by_owner
    assert by_owner["User:before-rpc"].outcome == "failed"
    ledger = SqlTokenRequesters(engine, audit_log, service_id="test")
    kts_tokens = [token for token in cluster.list_tokens() if token.token_requester == KTS]
    assert {str(token.owner) for token in kts_tokens} == {
        "User:after-rpc",
        "User:after-record",
        "User:none",
        "User:by-hand",
    }
    requesters = ledger.requesters([token.token_id for token in kts_tokens])
    for token in kts_tokens:
        creates = [e for e in events if e.token_id == token.token_id and e.action == Action.TOKEN_CREATE.value]
        assert [e.outcome for e in creates] == ["succeeded"], (token, events, results)
        assert creates[0].owner == str(token.owner)
        assert str(requesters[token.token_id]) == ("User:kts" if token.token_id == by_hand.token_id else "User:alice")
    assert by_owner["User:by-hand"].details["reconstructed"] is True
    assert sum(result.applied for result in results) == 2  # after-rpc, after-record: once between the two
    assert sum(result.reconstructed for result in results) == 1
    reconciler, made = _reconciler(any_audit_db, cluster, "kts-2")
    assert reconciler.reconcile() == Reconciliation()
    made.dispose()
    print(
        "\nkill points settled: before-pending nothing recorded, nothing made; before-rpc failed, no token; "
        "after-rpc and after-record succeeded with the cluster's token; none completed by its request; "
        "a token made by hand with kts's principal reconstructed"
    )


def _events(audit_log: SqlAuditLog) -> list[StoredEvent]:
    return audit_log.query(EventQuery(limit=1000))
