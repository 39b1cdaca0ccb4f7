"""The expiry sweep: decide from the cache which tokens are past expiry or maximum, then delete each one
only if its znode is still at the version judged (a renew that lands first wins), with its notification
and audit event. Deletes go in batches of one ZooKeeper transaction each. Running it twice, or on two
replicas at once, is harmless.

Each deletion writes a change notification, and brokers cannot list more than about a megabyte of them: the
sweep deletes only as many as the capacity guard says fit (``room``), leaving the rest to the next sweep
(they no longer authenticate meanwhile) and the reserve to expires (app/domain/capacity.py).

The leader sweeps every interval, and early when expired tokens pile up or a list nears its limit
(app/domain/sweep_schedule.py): tokens made to expire at once would otherwise hold their entries, against the
cluster and their requester's share, for up to an interval. Each batch's deletions are charged to their
requesters' shares in the batch's own transaction (app/storage/zk/token_shares.py), in the batches the admission
cuts (grouped by requester, app/storage/zk/admission.py).

This is the ZooKeeper backend's expiry: a KRaft controller expires its tokens itself."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from app.domain import token_rules
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.clock import Clock
from app.domain.errors import ClusterMigrating, ConcurrentModification, StoreUnavailable, TokenNotFound
from app.domain.sweep_schedule import SweepReason, SweepSchedule
from app.domain.token import TokenInformation
from app.service.admission import OPEN_ADMISSION, Admission, WriteCharge
from app.service.audit import Auditor, MutationBatches
from app.service.ports import StoredToken, TokenStore, TokenView

log = logging.getLogger(__name__)
PAUSE_WARNING_EVERY_S = 60.0


class Sweeper:
    def __init__(
        self,
        store: TokenStore,
        view: TokenView,
        *,
        auditor: Auditor,
        clock: Clock,
        interval_ms: int,
        room: Callable[[], int] | None = None,
        early_threshold: int | None = None,
        near_capacity: Callable[[], bool] | None = None,
        admission: Admission = OPEN_ADMISSION,
        timer: Callable[[], float] = time.monotonic,
        writes_allowed: Callable[[], bool] = lambda: True,
    ) -> None:
        """``early_threshold``: expired tokens that bring a sweep forward (None: every interval only);
        ``near_capacity``: whether a list is near its limit; ``admission``: cuts the batches and charges
        the deletions to their requesters' shares (app/storage/zk/admission.py); ``timer``: seconds, for the
        schedule (the clock says what has expired); ``writes_allowed``: False while the cluster refuses kts's
        writes (its migration to KRaft), when no sweep runs."""
        self._store = store
        self._writes_allowed = writes_allowed
        self._room = room
        self._view = view
        self._auditor = auditor
        self._clock = clock
        self._schedule = SweepSchedule(interval_ms, early_threshold or sys.maxsize)
        self._near_capacity = near_capacity or (lambda: False)
        self._admission = admission
        self._timer = timer
        self._pause_warned_s: float | None = None
        # Read by the metrics at each scrape.
        self.runs_total = 0
        self.early_runs_total = 0
        self.deleted_total = 0

    def run(self, lost: threading.Event) -> None:
        """The leader's loop until leadership is lost: look every second (or every interval, when shorter)
        whether a sweep is due (app/domain/sweep_schedule.py). The first interval sweep comes one interval
        after election, as the scheduled task of a Kafka controller does; expired tokens stop authenticating
        at their expiry anyway, so only the room they hold waits on the sweep."""
        last_ms = self._monotonic_ms()
        while not lost.wait(self._schedule.check_every_ms() / 1000):
            now_ms = self._monotonic_ms()
            expired = self._view.expired_count(self._clock.now_ms())
            try:
                reason = self._schedule.due(
                    now_ms=now_ms, last_ms=last_ms, expired=expired, near_capacity=self._near_capacity
                )
                if reason is None:
                    continue
                last_ms = now_ms
                if reason is not SweepReason.INTERVAL:
                    self.early_runs_total += 1
                    log.info("sweeping early: %s (%d expired tokens wait)", reason.value, expired)
                self.sweep(lost)
            except (StoreUnavailable, ClusterMigrating) as exc:
                log.warning("sweep interrupted: %s", exc.message)

    def _monotonic_ms(self) -> int:
        return int(self._timer() * 1000)

    def sweep(self, lost: threading.Event | None = None) -> int:
        if not self._writes_allowed():
            return 0  # the cluster moves to KRaft, whose controller expires tokens now (the cluster watch logs it)
        self.runs_total += 1
        now = self._clock.now_ms()
        doomed = token_rules.expired_tokens((stored.token for stored in self._view.tokens()), now)
        deleted = 0
        planned = 0
        batches = self._admission.deletion_batches(doomed)
        if not batches:
            return 0
        # One re-read ahead: the next batch's versions are read while this batch's audit commit and transaction
        # wait on their disks. Batches hold disjoint tokens, so each deletion is still guarded by the version of
        # its own batch's re-read (a renew in between refuses it, as before).
        with (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep-read") as reader,
            self._auditor.mutation_batches() as audited,  # settles the last batch however the sweep ends
        ):
            ahead = self._read(reader, batches[0])
            for index, batch in enumerate(batches):
                current = ahead
                if lost is not None and lost.is_set():
                    break  # leadership gone: another replica sweeps now
                left = len(doomed) - planned
                planned += len(batch)
                if self._room is not None:
                    batch = batch[: self._room()]
                    if not batch:
                        self._warn_paused(left)
                        break
                if index + 1 < len(batches):
                    ahead = self._read(reader, batches[index + 1])
                deleted += self._sweep_batch(batch, current, audited)
            ahead.cancel()  # a read ahead of a batch the sweep stopped before: not needed
        if deleted:
            log.info("sweep deleted %d expired tokens", deleted)
        return deleted

    def _warn_paused(self, left: int) -> None:
        now_s = self._timer()
        if self._pause_warned_s is not None and now_s - self._pause_warned_s < PAUSE_WARNING_EVERY_S:
            return  # early sweeps may find no room every few seconds: one line a minute says it
        self._pause_warned_s = now_s
        log.warning(
            "sweep paused with %d expired tokens left: the notification list has no room for their deletions; "
            "the next sweep goes on",
            left,
        )

    def _read(self, reader: ThreadPoolExecutor, batch: list[TokenInformation]) -> Future[dict[str, StoredToken | None]]:
        """The re-read of a batch, sent now: the versions its deletions are guarded by."""
        ids = [token.token_id for token in batch]
        known = {token_id: stored for token_id in ids if (stored := self._view.get(token_id)) is not None}
        return reader.submit(self._store.get_many, ids, known)

    def _sweep_batch(
        self,
        batch: list[TokenInformation],
        read: Future[dict[str, StoredToken | None]],
        audited: MutationBatches,
    ) -> int:
        """Delete a batch in one transaction, audited with one commit that also settles the batch before it
        (``MutationBatches``). If any token changed since it was read, the whole transaction is refused; then
        each is deleted on its own, so the token that changed survives and the others still go. Each deletion
        is charged to its requester's share in the same transaction."""
        current = read.result()  # authoritative versions (of the whole batch, which the room may have cut)
        now = self._clock.now_ms()
        still = [
            stored
            for token in batch
            if (stored := current.get(token.token_id)) is not None and stored.token.is_expired(now)
        ]
        if not still:
            return 0
        charges = self._charges([stored.token for stored in still])
        try:
            audited.run(
                [_event(stored) for stored in still],
                lambda intents: self._store.delete_many(
                    [(s.token.token_id, s.version, intent) for s, intent in zip(still, intents, strict=True)],
                    charges,
                ),
            )
        except (ConcurrentModification, TokenNotFound):
            return sum(self._sweep_one(stored) for stored in still)
        self._settle(charges)
        self.deleted_total += len(still)  # counted at once: a later failure must not hide what was done
        self._view.discard_many([stored.token.token_id for stored in still])
        return len(still)

    def _charges(self, tokens: list[TokenInformation]) -> list[WriteCharge]:
        return self._admission.deletion_charges(tokens)

    def _settle(self, charges: list[WriteCharge]) -> None:
        self._admission.settle(charges)

    def _sweep_one(self, judged: StoredToken) -> int:
        current = self._store.get(judged.token.token_id)
        if current is None or not current.token.is_expired(self._clock.now_ms()):
            return 0
        event = _event(current)
        charges = self._charges([current.token])
        try:
            self._auditor.mutation(event, self._deleting(current, charges), succeeded=_succeeded(event))
        except (ConcurrentModification, TokenNotFound):
            return 0  # renewed or expired by a request meanwhile: that request wins
        self._settle(charges)
        self._deleted(current.token.token_id)
        return 1

    def _deleting(self, stored: StoredToken, charges: list[WriteCharge]) -> Callable[[int], None]:
        def delete(intent: int) -> None:
            self._store.delete_many([(stored.token.token_id, stored.version, intent)], charges)

        return delete

    def _deleted(self, token_id: str) -> None:
        self.deleted_total += 1  # counted at once: a later failure must not hide what was done
        self._view.discard(token_id)


def _event(stored: StoredToken) -> AuditEvent:
    token = stored.token
    return AuditEvent(
        Action.TOKEN_DELETE_BY_SWEEP,
        Outcome.PENDING,
        owner=str(token.owner),
        token_requester=str(token.token_requester),
        token_id=token.token_id,
        details={"expiryTimestamp": token.expiry_timestamp, "maxTimestamp": token.max_timestamp},
    )


def _succeeded(event: AuditEvent) -> Callable[[None], AuditEvent]:
    return lambda _: event.ended(Outcome.SUCCEEDED)
