"""The expiry sweep on a real ZooKeeper with a real SQLite audit log: each expired token goes with one
notification and one succeeded ``token.sweep`` event; a renew that lands first wins; under leadership
only one replica sweeps."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from sqlalchemy import Engine

from app.domain.audit import EventQuery
from app.domain.clock import SystemClock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service import admission as admission_module
from app.service.audit import Auditor, AuditReconciler, MutationBatches
from app.service.ports import Renewal, StoredToken, TokenChange
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk.connection import ZkConnection
from app.storage.zk.election import Leadership
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.sweeper import Sweeper
from app.storage.zk.token_cache import TokenCache
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import KtsZNodes, TokenChangeZNode, TokenZNode
from tests.api.helpers import eventually, notifications
from tests.conftest import SECRET

HOUR = 3_600_000
ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")


def _now() -> int:
    return time.time_ns() // 1_000_000


def _token(token_id: str, *, expiry_in_ms: int, max_in_ms: int = 7 * 24 * HOUR) -> TokenInformation:
    now = _now()
    return TokenInformation(token_id, ALICE, ALICE, (BOB,), now - HOUR, now + expiry_in_ms, now + max_in_ms)


class Replica:
    """What one kts replica needs to sweep: its own session, cache, audit log and auditor."""

    def __init__(self, connect: str, engine: Engine, service_id: str, *, interval_ms: int = HOUR) -> None:
        self.zk = ZkConnection(connect, session_timeout_ms=6000)
        self.zk.start()
        self.store = ZkTokenStore(self.zk)
        self.cache = TokenCache(self.zk, self.store, TokenSecret(SECRET))
        self.cache.start()
        self.audit_log = SqlAuditLog(engine, service_id=service_id, clock=SystemClock())
        self.sweeper = Sweeper(
            self.store,
            self.cache,
            auditor=Auditor(self.audit_log, ZkIntentStore(self.zk)),
            clock=SystemClock(),
            interval_ms=interval_ms,
        )

    def close(self) -> None:
        self.cache.stop()
        self.zk.stop()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    audit_engine = make_engine(f"sqlite:///{tmp_path / 'audit.db'}")
    migrations.upgrade(audit_engine)
    yield audit_engine
    audit_engine.dispose()


@pytest.fixture
def replica(zk_connect: str, engine: Engine) -> Iterator[Replica]:
    one = Replica(zk_connect, engine, "svc-a")
    yield one
    one.close()


@pytest.fixture
def other_writer(zk_connect: str) -> Iterator[ZkTokenStore]:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield ZkTokenStore(connection)
    connection.stop()


def _sweep_events(audit_log: SqlAuditLog) -> list[tuple[str | None, str]]:
    return sorted((event.token_id, event.outcome) for event in audit_log.query(EventQuery(action="token.sweep")))


def test_expired_tokens_are_deleted_with_one_notification_and_one_succeeded_audit_event_each(
    replica: Replica, other_writer: ZkTokenStore, raw_zk: KazooClient
) -> None:
    other_writer.create(_token("PastExpiryAAAAAAAAAAAA", expiry_in_ms=-1_000))
    other_writer.create(_token("PastMaxAAAAAAAAAAAAAAA", expiry_in_ms=HOUR, max_in_ms=-1_000))
    other_writer.create(_token("LiveTokenAAAAAAAAAAAAA", expiry_in_ms=HOUR))
    eventually(lambda: len(replica.cache) == 3)
    notified_before = len(raw_zk.get_children(TokenChangeZNode.ROOT))

    assert replica.sweeper.sweep() == 2

    assert raw_zk.get_children(TokenZNode.ROOT) == ["LiveTokenAAAAAAAAAAAAA"]
    new_notifications = notifications(raw_zk)[notified_before:]
    assert sorted(new_notifications) == [b"PastExpiryAAAAAAAAAAAA", b"PastMaxAAAAAAAAAAAAAAA"]
    assert _sweep_events(replica.audit_log) == [
        ("PastExpiryAAAAAAAAAAAA", "succeeded"),
        ("PastMaxAAAAAAAAAAAAAAA", "succeeded"),
    ]
    for event in replica.audit_log.query(EventQuery(action="token.sweep")):
        assert (event.owner, event.token_requester, event.service_id) == ("User:alice", "User:alice", "svc-a")
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == []  # every marker cleared once its event was settled
    assert {stored.token.token_id for stored in replica.cache.tokens()} == {"LiveTokenAAAAAAAAAAAAA"}

    assert replica.sweeper.sweep() == 0  # a second sweep finds nothing left to do
    assert len(replica.audit_log.query(EventQuery(action="token.sweep"))) == 2


def _renewed_for_an_hour(stored: StoredToken) -> TokenChange[None]:
    return TokenChange(stored.token.with_expiry(_now() + HOUR), None, Renewal(-1))


class _RenewedRightAfterRead(ZkTokenStore):
    """A token store after whose read of one token another replica renews it (a real compare-and-set race)."""

    def __init__(self, zk: ZkConnection, renewer: ZkTokenStore, token_id: str) -> None:
        super().__init__(zk)
        self._renewer = renewer
        self._token_id = token_id
        self._renewed = False

    def _race(self, stored: StoredToken | None) -> None:
        if stored is not None and not self._renewed:
            self._renewed = True
            self._renewer.change(stored.token.token_id, _renewed_for_an_hour)

    def get(self, token_id: str) -> StoredToken | None:
        stored = super().get(token_id)
        if token_id == self._token_id:
            self._race(stored)
        return stored

    def get_many(
        self, token_ids: list[str], known: Mapping[str, StoredToken] | None = None
    ) -> dict[str, StoredToken | None]:
        found = super().get_many(token_ids, known)
        self._race(found.get(self._token_id))
        return found


def test_a_token_renewed_between_plan_and_delete_survives(
    replica: Replica, other_writer: ZkTokenStore, raw_zk: KazooClient
) -> None:
    other_writer.create(_token("RenewedInTimeAAAAAAAAA", expiry_in_ms=-1_000))
    other_writer.create(_token("NotRenewedAAAAAAAAAAAA", expiry_in_ms=-1_000))
    eventually(lambda: len(replica.cache) == 2)
    racing_store = _RenewedRightAfterRead(replica.zk, other_writer, "RenewedInTimeAAAAAAAAA")
    sweeper = Sweeper(
        racing_store,
        replica.cache,
        auditor=Auditor(replica.audit_log, ZkIntentStore(replica.zk)),
        clock=SystemClock(),
        interval_ms=HOUR,
    )

    assert sweeper.sweep() == 1

    assert raw_zk.get_children(TokenZNode.ROOT) == ["RenewedInTimeAAAAAAAAA"]
    survivor = other_writer.get("RenewedInTimeAAAAAAAAA")
    assert survivor is not None and survivor.version == 1 and survivor.token.expiry_timestamp > _now()
    eventually(lambda: (cached := replica.cache.get("RenewedInTimeAAAAAAAAA")) is not None and cached.version == 1)
    # The batch transaction was refused as a whole and is on record as failed for both; then each token
    # was judged again on its own: the renewed one survives, the other is deleted.
    assert sorted(_sweep_events(replica.audit_log)) == [
        ("NotRenewedAAAAAAAAAAAA", "failed"),
        ("NotRenewedAAAAAAAAAAAA", "succeeded"),
        ("RenewedInTimeAAAAAAAAA", "failed"),
    ]
    assert notifications(raw_zk).count(b"RenewedInTimeAAAAAAAAA") == 2  # its create and its renew only
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == []


def test_a_token_renewed_after_the_cache_judged_it_is_skipped_without_an_audit_event(
    replica: Replica, other_writer: ZkTokenStore, raw_zk: KazooClient
) -> None:
    other_writer.create(_token("RenewedEarlyAAAAAAAAAA", expiry_in_ms=-1_000))
    eventually(lambda: len(replica.cache) == 1)
    replica.cache.stop()  # the cache keeps showing the expired version
    other_writer.change("RenewedEarlyAAAAAAAAAA", _renewed_for_an_hour)

    assert replica.sweeper.sweep() == 0

    assert raw_zk.get_children(TokenZNode.ROOT) == ["RenewedEarlyAAAAAAAAAA"]
    assert _sweep_events(replica.audit_log) == []


def test_under_leadership_only_one_replica_sweeps_and_each_token_is_swept_once(
    zk_connect: str, engine: Engine, other_writer: ZkTokenStore, raw_zk: KazooClient
) -> None:
    # Sweeping every 50 ms: a second sweeper running at the same time would collide and leave failed events.
    replicas = [Replica(zk_connect, engine, f"svc-{name}", interval_ms=50) for name in "abc"]
    leaderships = [
        Leadership(one.zk, KtsZNodes.SWEEPER_ELECTION, f"svc-{name}", one.sweeper.run)
        for one, name in zip(replicas, "abc", strict=True)
    ]
    try:
        for leadership in leaderships:
            leadership.start()
        eventually(lambda: sum(leadership.is_leader for leadership in leaderships) == 1)
        for n in range(6):
            other_writer.create(_token(f"ExpiresSoon{n}AAAAAAAAAA", expiry_in_ms=100))
        other_writer.create(_token("LiveTokenAAAAAAAAAAAAA", expiry_in_ms=HOUR))

        eventually(lambda: raw_zk.get_children(TokenZNode.ROOT) == ["LiveTokenAAAAAAAAAAAAA"])
        runs = sum(one.sweeper.runs_total for one in replicas)
        eventually(lambda: sum(one.sweeper.runs_total for one in replicas) >= runs + 3)  # a few more sweeps

        events = replicas[0].audit_log.query(EventQuery(action="token.sweep"))
        assert sorted(event.token_id or "" for event in events) == [f"ExpiresSoon{n}AAAAAAAAAA" for n in range(6)]
        assert {event.outcome for event in events} == {"succeeded"}
        assert len({event.service_id for event in events}) == 1  # one replica did it all
        assert sum(one.sweeper.deleted_total for one in replicas) == 6
    finally:
        stoppers = [threading.Thread(target=leadership.stop) for leadership in leaderships]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        for one in replicas:
            one.close()


class _Killed(BaseException):
    """The process dies: nothing after this runs, not even the sweep's own cleanup."""


class _DiesBeforeTransaction(ZkTokenStore):
    """A token store whose process dies before its ``dies_at``-th deletion transaction is sent."""

    def __init__(self, zk: ZkConnection, dies_at: int) -> None:
        super().__init__(zk)
        self._left = dies_at

    def delete_many(self, *args: Any, **kwargs: Any) -> None:
        self._left -= 1
        if self._left == 0:
            raise _Killed
        super().delete_many(*args, **kwargs)


class _DiesAfterTransactions(ZkTokenStore):
    """A token store whose process dies right after its ``survives``-th deletion transaction committed."""

    def __init__(self, zk: ZkConnection, survives: int) -> None:
        super().__init__(zk)
        self._left = survives

    def delete_many(self, *args: Any, **kwargs: Any) -> None:
        super().delete_many(*args, **kwargs)
        self._left -= 1
        if self._left == 0:
            raise _Killed


def _sweep_until_killed(replica: Replica, other_writer: ZkTokenStore, ids: list[str], dying: ZkTokenStore) -> None:
    """``ids`` written expired by another writer, then swept through ``dying``, a store that kills the sweep."""
    for token_id in ids:
        other_writer.create(_token(token_id, expiry_in_ms=-1_000))
    eventually(lambda: len(replica.cache) == len(ids))
    sweeper = Sweeper(
        dying,
        replica.cache,
        auditor=Auditor(replica.audit_log, ZkIntentStore(replica.zk)),
        clock=SystemClock(),
        interval_ms=HOUR,
    )
    with pytest.raises(_Killed):
        sweeper.sweep()


def test_a_replica_killed_between_batches_leaves_only_its_last_batch_pending_which_the_reconciler_settles(
    replica: Replica, other_writer: ZkTokenStore, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch's commit settles the batch before it (one commit per batch): a kill after the second batch's
    transaction leaves the first settled, the second pending with its intent markers, the third untouched."""
    monkeypatch.setattr(admission_module, "OPEN_BATCH", 2)
    monkeypatch.setattr(MutationBatches, "close", lambda self: None)  # a killed process settles nothing more
    ids = [f"Killed{n}AAAAAAAAAAAAAAA" for n in range(5)]
    _sweep_until_killed(replica, other_writer, ids, _DiesAfterTransactions(replica.zk, survives=2))

    assert raw_zk.get_children(TokenZNode.ROOT) == [ids[4]]
    assert _sweep_events(replica.audit_log) == [
        (ids[0], "succeeded"),
        (ids[1], "succeeded"),
        (ids[2], "pending"),
        (ids[3], "pending"),
    ]
    pending = sorted(event.id for event in replica.audit_log.query(EventQuery(outcome="pending")))
    # One marker for the batch's two events, in the transaction that deleted their tokens.
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == [f"{pending[0]}-{pending[-1]}"]
    assert KtsZNodes.decode_intent_batch(raw_zk.get(KtsZNodes.audit_intent_batch(pending))[0]) == pending

    reconciler = AuditReconciler(replica.audit_log, ZkIntentStore(replica.zk), clock=SystemClock(), service_id="svc-a")
    assert reconciler.reconcile(at_start=True) == 2  # the restarted replica settles its own events

    events = replica.audit_log.query(EventQuery(action="token.sweep"))
    assert sorted((event.token_id, event.outcome) for event in events) == [
        (token_id, "succeeded") for token_id in ids[:4]
    ]
    assert sorted(event.token_id for event in events if event.details.get("reconciled")) == ids[2:4]
    assert raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == []
    monkeypatch.undo()
    assert replica.sweeper.sweep() == 1  # the next sweep takes the rest


def test_a_replica_killed_before_a_batch_transaction_leaves_it_pending_without_a_marker_and_it_is_settled_failed(
    replica: Replica, other_writer: ZkTokenStore, raw_zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between the batch's pending commit and its transaction: its events are pending, no marker names
    them, its tokens are still there; the reconciler settles them failed, and the next sweep deletes the tokens."""
    monkeypatch.setattr(admission_module, "OPEN_BATCH", 2)
    monkeypatch.setattr(MutationBatches, "close", lambda self: None)
    ids = [f"Killed{n}BBBBBBBBBBBBBBB" for n in range(4)]
    _sweep_until_killed(replica, other_writer, ids, _DiesBeforeTransaction(replica.zk, dies_at=2))

    left = sorted(raw_zk.get_children(TokenZNode.ROOT))
    assert len(left) == 2
    assert _sweep_events(replica.audit_log) == sorted(
        [
            *((token_id, "succeeded") for token_id in ids if token_id not in left),
            *((token_id, "pending") for token_id in left),
        ]
    )
    # The first batch's marker is deleted once its events are settled (not waited for); none names the second's.
    eventually(lambda: raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == [])

    reconciler = AuditReconciler(replica.audit_log, ZkIntentStore(replica.zk), clock=SystemClock(), service_id="svc-a")
    assert reconciler.reconcile(at_start=True) == 2

    settled = {event.token_id: event for event in replica.audit_log.query(EventQuery(action="token.sweep"))}
    assert {token_id: settled[token_id].outcome for token_id in left} == dict.fromkeys(left, "failed")
    assert all(settled[token_id].details.get("reconciled") for token_id in left)
    monkeypatch.undo()
    assert replica.sweeper.sweep() == 2  # the tokens the killed batch never deleted go now
    assert raw_zk.get_children(TokenZNode.ROOT) == []
