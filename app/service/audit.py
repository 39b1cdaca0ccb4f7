"""Auditing every action, and keeping the audit trail and ZooKeeper in agreement.

The protocol for a mutation (token create/renew/expire, ACL and credential changes):

1. Decide with the domain rules. A refusal is recorded as ``denied`` (best effort: the refusal stands
   whether or not it could be written) and raised.
2. Append the event as ``pending`` and commit. If the audit database cannot take it, the request fails
   with 503 and nothing has changed: audit fails closed.
3. Write to ZooKeeper in one multi-op transaction that also creates the intent marker
   ``/kts/audit-intents/<event id>``. The marker exists if and only if the change was applied. A batch of
   changes made in one transaction (the sweep's deletions) gets one marker for all its events,
   ``/kts/audit-intents/<first id>-<last id>`` listing their ids.
4. Complete the event as ``succeeded`` (or ``failed``/``denied`` with the error), then delete the marker.

A crash or an outage can interrupt this anywhere. Before 2: nothing happened, nothing recorded. Between 2
and 3, or with 3's outcome unknown (a connection lost mid-commit), or before 4 completes: the event stays
``pending``. The reconciler (``AuditReconciler``, run at start-up and then periodically) settles every
pending event by the marker: present means the change was applied (``succeeded``), absent means it never
was (``failed``). So no token exists without its create event, and no create event claims a token that
was never issued unless it is marked failed. Markers whose events are all settled are deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Protocol, TypeVar

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext, StoredEvent
from app.domain.clock import Clock
from app.domain.errors import (
    CapacityExhausted,
    KafkaError,
    KtsError,
    StoreUnavailable,
    TokenQuotaExceeded,
    TokenWriteShareExceeded,
)
from app.service.poller import Poller

log = logging.getLogger(__name__)
T = TypeVar("T")

# Set by the API for each request; events pick up the request id and client address from it.
request_context: ContextVar[RequestContext] = ContextVar("kts_request_context", default=RequestContext())  # noqa: B039 - frozen

# Pending events younger than this may belong to requests still in flight on another replica.
RECONCILE_GRACE_MS = 60_000
RECONCILE_INTERVAL_S = 30.0
# Pending events settled per database commit and per ZooKeeper round trip (a sweep batch leaves 1000).
RECONCILE_BATCH = 1000


class AuditLog(Protocol):
    def ping(self) -> None: ...

    def append(self, event: AuditEvent, context: RequestContext) -> int: ...

    def append_many(
        self, batch: list[AuditEvent], context: RequestContext, *, succeeded: Sequence[int] = ()
    ) -> list[int]:
        """Insert ``batch`` in one commit (ids in the order given); in the same commit, mark the pending events
        ``succeeded`` as succeeded, unchanged otherwise (``MutationBatches``)."""
        ...

    def complete(self, event_id: int, event: AuditEvent) -> bool: ...

    def complete_many(self, settled: list[tuple[int, AuditEvent]]) -> int: ...

    def pending(self, *, older_than_ms: int, service_id: str | None = None) -> list[StoredEvent]: ...

    def query(self, query: EventQuery) -> list[StoredEvent]: ...

    def is_pending(self, event_id: int) -> bool | None: ...

    def delete_before(self, timestamp_ms: int, limit: int) -> int:
        """Delete up to ``limit`` settled events older than ``timestamp_ms``, oldest first; how many."""
        ...


class IntentStore(Protocol):
    """The marks of applied changes, by their pending event's id (however the backend keeps them): one per event,
    or one for a batch of events changed in one transaction (``TokenStore.delete_many``; a store may mark such a
    batch one event at a time too)."""

    def existing(self, event_ids: list[int]) -> set[int]:
        """Those of ``event_ids`` that are marked, by a mark of their own or their batch's (few round trips)."""
        ...

    def clear(self, event_id: int) -> None: ...

    def clear_many(self, event_ids: list[int]) -> None:
        """Delete the marks of these settled events, each marked on its own."""
        ...

    def clear_soon(self, event_ids: list[int]) -> None:
        """``clear_many`` without waiting for it (a mark left behind is harmless: the reconciler deletes it)."""
        ...

    def clear_batch(self, event_ids: list[int]) -> None:
        """Delete the mark of a batch changed in one transaction, once all its events are settled (``event_ids``:
        exactly the batch's)."""
        ...

    def clear_batch_soon(self, event_ids: list[int]) -> None:
        """``clear_batch`` without waiting for it."""
        ...

    def marks(self) -> list[list[int]]:
        """Every mark, as the ids of the events it marks (one, or a batch's), in order."""
        ...


class AuditObserver(Protocol):
    """Told how each action ended, whether or not the audit database took it (metrics count actions).
    Called on the acting thread, so it must be quick."""

    def observe(self, event: AuditEvent) -> None: ...


class Auditor:
    def __init__(self, log_: AuditLog, intents: IntentStore, *, observer: AuditObserver | None = None) -> None:
        self._log = log_
        self._intents = intents
        self._observer = observer

    def record(self, event: AuditEvent) -> None:
        """Record a finished action (a read, a refusal, a failed login). Best effort: never fails the request."""
        self._observe(event)
        try:
            self._log.append(event, request_context.get())
        except KtsError as exc:
            log.warning("audit event %s not recorded: %s", event.action, exc.message)
        except Exception as exc:  # a row the database rejects must not turn the request into a 500
            # Only the error's type: its text may quote the rejected values, which a caller chose.
            log.warning("audit event %s not recorded: the database rejected it (%s)", event.action, type(exc).__name__)

    def refused(self, event: AuditEvent, error: KtsError) -> None:
        self.record(_ended_by(event, error))

    def decided(self, event: AuditEvent, decide: Callable[[], T]) -> T:
        """Run a check; a refusal (any KtsError) is recorded as ``event`` refused before it propagates."""
        try:
            return decide()
        except KtsError as exc:
            self.refused(event, exc)
            raise

    def mutation(self, event: AuditEvent, perform: Callable[[int], T], *, succeeded: Callable[[T], AuditEvent]) -> T:
        """Run ``perform(intent)`` under the protocol above (``intent``: the pending event's id, which the store
        marks its own way); ``succeeded`` builds the completed event."""
        try:
            event_id = self._log.append(event.ended(Outcome.PENDING), request_context.get())  # 503 if down
        except KtsError as exc:
            self._observe(_ended_by(event, exc))  # nothing was done
            raise
        try:
            result = perform(event_id)
        except StoreUnavailable as exc:
            # The outcome is unknown (a commit may land although its answer was lost): the event stays
            # pending and the reconciler settles it by the intent marker.
            self._observe(event.ended(Outcome.PENDING, error=exc.name))
            raise
        except KtsError as exc:
            self._settle(event_id, _ended_by(event, exc))
            raise
        self._settle(event_id, succeeded(result))
        return result

    def mutations(
        self,
        batch: list[AuditEvent],
        perform: Callable[[list[int]], None],
        *,
        succeeded: Callable[[AuditEvent], AuditEvent] | None = None,
    ) -> None:
        """The same protocol for several changes made in one ZooKeeper transaction (the sweeper's and bulk
        revocation's batches): one commit for the pending events, one transaction, one commit settling them
        all (``succeeded`` completes each event; by default it is just marked succeeded)."""
        context = request_context.get()
        try:
            event_ids = self._log.append_many([event.ended(Outcome.PENDING) for event in batch], context)
        except KtsError as exc:
            for event in batch:
                self._observe(_ended_by(event, exc))
            raise
        self._perform_batch(event_ids, batch, perform)
        complete = succeeded or (lambda event: event.ended(Outcome.SUCCEEDED))
        self._settle_many(event_ids, [complete(event) for event in batch])

    def mutation_batches(self) -> MutationBatches:
        """For a run of batches, each in one ZooKeeper transaction (the sweep's): ``mutations`` with one audit
        commit per batch rather than two. Close it (a ``with`` block) to settle the last batch."""
        return MutationBatches(self)

    def _perform_batch(
        self, event_ids: list[int], batch: list[AuditEvent], perform: Callable[[list[int]], None]
    ) -> None:
        """Step 3 for a batch whose pending events are committed: the transaction with their markers. A refusal
        settles them at once; an unknown outcome leaves them pending for the reconciler."""
        try:
            perform(event_ids)
        except StoreUnavailable as exc:
            for event in batch:  # outcome unknown: the reconciler settles the events by their markers
                self._observe(event.ended(Outcome.PENDING, error=exc.name))
            raise
        except KtsError as exc:
            self._settle_many(event_ids, [_ended_by(event, exc) for event in batch])
            raise

    def _observe(self, event: AuditEvent) -> None:
        if self._observer is not None:
            self._observer.observe(event)

    def _settle_many(self, event_ids: list[int], events: list[AuditEvent]) -> None:
        for event in events:
            self._observe(event)
        try:
            self._log.complete_many(list(zip(event_ids, events, strict=True)))
        except KtsError as exc:
            _left_pending(event_ids, exc)
            return
        try:
            self._intents.clear_batch(event_ids)
        except KtsError:
            pass

    def _settle(self, event_id: int, event: AuditEvent) -> None:
        self._observe(event)
        try:
            self._log.complete(event_id, event)
        except KtsError as exc:
            # The change is done (or not) and the marker says which; the reconciler settles the event.
            log.warning("audit event %d left pending (%s); reconciliation will settle it", event_id, exc.message)
            return
        try:
            # Soon, not now: nothing waits for it, and ZooKeeper's next transaction can carry it.
            self._intents.clear_soon([event_id])
        except KtsError:
            pass  # an orphan marker of a settled event is removed by the reconciler


class MutationBatches:
    """Batches of changes audited one after another under the protocol above, one commit each: a batch's pending
    events are committed together with the settling of the batch before it, which succeeded. For each batch the
    protocol holds: its events are committed pending before its ZooKeeper transaction, and settled only after it
    applied, one batch later (or at ``close``). A crash in between leaves the last batch pending with its intent
    markers, which the reconciler settles as after any crash. A sweep of 100k tokens makes 201 fsync'd commits
    where it made 400, and marks each batch succeeded with one statement rather than one row at a time.
    Not thread-safe: one sweep at a time uses it."""

    def __init__(self, auditor: Auditor) -> None:
        self._auditor = auditor
        self._log = auditor._log
        self._intents = auditor._intents
        self._observe = auditor._observe
        self._applied: list[int] = []  # the last batch: applied in ZooKeeper, still pending in the database

    def __enter__(self) -> MutationBatches:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(self, batch: list[AuditEvent], perform: Callable[[list[int]], None]) -> None:
        """``Auditor.mutations`` for one batch (each event marked succeeded unchanged once applied)."""
        settling, self._applied = self._applied, []
        try:
            event_ids = self._log.append_many(
                [_pending(event) for event in batch], request_context.get(), succeeded=settling
            )
        except KtsError as exc:
            _left_pending(settling, exc)
            for event in batch:
                self._observe(_ended_by(event, exc))  # nothing was done
            raise
        self._clear(settling)
        self._auditor._perform_batch(event_ids, batch, perform)
        for event in batch:
            self._observe(event.ended(Outcome.SUCCEEDED))
        self._applied = event_ids

    def close(self) -> None:
        """Settle the last batch (it succeeded)."""
        settling, self._applied = self._applied, []
        if not settling:
            return
        try:
            self._log.append_many([], request_context.get(), succeeded=settling)
        except KtsError as exc:
            _left_pending(settling, exc)
            return
        self._clear(settling)

    def _clear(self, event_ids: list[int]) -> None:
        if event_ids:
            try:
                # Not waited for: the sweep goes on with its next batch while ZooKeeper deletes its marker.
                self._intents.clear_batch_soon(event_ids)
            except KtsError:
                pass  # orphan markers of settled events are removed by the reconciler


def _pending(event: AuditEvent) -> AuditEvent:
    return event if event.outcome is Outcome.PENDING else event.ended(Outcome.PENDING)


def _left_pending(event_ids: list[int], error: KtsError) -> None:
    if event_ids:
        log.warning("%d audit events left pending (%s); reconciliation will settle them", len(event_ids), error.message)


def _ended_by(event: AuditEvent, error: KtsError) -> AuditEvent:
    code = error.code if isinstance(error, KafkaError) else None
    # A full cluster, a quota or a share refuses by rule, like Kafka's checks: denied, not a failure of kts or its
    # stores.
    refused = isinstance(error, KafkaError | CapacityExhausted | TokenQuotaExceeded | TokenWriteShareExceeded)
    outcome = Outcome.DENIED if refused else Outcome.FAILED
    return event.ended(outcome, error_code=code, error=error.name)


class AuditReconciler:
    """Settles pending events by their intent markers, and removes the markers whose events are all settled."""

    def __init__(self, log_: AuditLog, intents: IntentStore, *, clock: Clock, service_id: str) -> None:
        self._log = log_
        self._intents = intents
        self._clock = clock
        self._service_id = service_id
        self._poller = Poller(
            "audit-reconciler", self.reconcile, interval_s=RECONCILE_INTERVAL_S, failed=_reconcile_failed
        )

    def reconcile(self, *, at_start: bool = False) -> int:
        """One pass; returns how many events it settled. At start-up this replica's own pending events are
        settled whatever their age: none of its requests can still be in flight."""
        cutoff = self._clock.now_ms() - RECONCILE_GRACE_MS
        pending = self._log.pending(older_than_ms=cutoff, service_id=self._service_id if at_start else None)
        settled = 0
        for start in range(0, len(pending), RECONCILE_BATCH):
            batch = pending[start : start + RECONCILE_BATCH]
            applied = self._intents.existing([stored.id for stored in batch])
            outcomes = [
                (
                    stored.id,
                    AuditEvent(
                        action=Action(stored.action),
                        outcome=Outcome.SUCCEEDED if stored.id in applied else Outcome.FAILED,
                        token_id=stored.token_id,
                        details={**stored.details, "reconciled": True},
                    ),
                )
                for stored in batch
            ]
            done = self._log.complete_many(outcomes)
            settled += done
            log.warning(
                "reconciled %d audit events (ids %d to %d): %d applied, %d never applied",
                done,
                batch[0].id,
                batch[-1].id,
                len(applied),
                len(batch) - len(applied),
            )
        self._clear_settled()
        return settled

    def _clear_settled(self) -> None:
        """Delete the markers whose events are all settled: those settled above, and those whose deletion was lost
        (a crash or an outage after the settling). A batch's marker stays while any of its events is pending (they
        may be pending past the cut-off above, or beyond this pass's batches), since those are settled by it."""
        singles = []
        for marked in self._intents.marks():
            if not all(self._log.is_pending(event_id) is False for event_id in marked):
                continue
            if len(marked) == 1:
                singles.extend(marked)
            else:
                self._intents.clear_batch(marked)
        if singles:
            self._intents.clear_many(singles)

    def start(self) -> None:
        self.reconcile(at_start=True)
        self._poller.start()

    def stop(self) -> None:
        self._poller.stop()


def _reconcile_failed(exc: KtsError) -> None:
    log.warning("audit reconciliation postponed: %s", exc.message)


__all__ = [
    "AuditLog",
    "AuditObserver",
    "AuditReconciler",
    "Auditor",
    "IntentStore",
    "MutationBatches",
    "request_context",
]
