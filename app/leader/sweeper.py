"""The expiry sweep: decide from the cache which tokens are past expiry or maximum, then delete each one
only if its znode is still at the version judged (a renew that lands first wins), with its notification
and audit event. Deletes go in batches of one ZooKeeper transaction each. Running it twice, or on two
replicas at once, is harmless.

Each deletion writes a change notification, and brokers cannot list more than about a megabyte of them: the
sweep deletes only as many as the capacity guard says fit (``room``), leaving the rest to the next sweep
(they no longer authenticate meanwhile) and the reserve to expires (app/domain/capacity.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from app.domain import token_rules
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.clock import Clock
from app.domain.errors import ClusterMigrating, ConcurrentModification, StoreUnavailable, TokenNotFound
from app.domain.token import TokenInformation
from app.service.audit import Auditor
from app.service.ports import StoredToken, TokenStore, TokenView

log = logging.getLogger(__name__)

# Tokens deleted per ZooKeeper transaction, as bulk revocation does: with their notifications and intent
# markers a batch is about 140 KB, and about 480 KB in the worst case measured for revocation (a 200-character
# chroot, 64-character ids, creator-only ACLs), under half of ZooKeeper's 1 MB request limit (jute.maxbuffer).
BATCH = 500


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
        writes_allowed: Callable[[], bool] = lambda: True,
    ) -> None:
        self._store = store
        self._writes_allowed = writes_allowed
        self._room = room
        self._view = view
        self._auditor = auditor
        self._clock = clock
        self._interval_s = interval_ms / 1000
        # Read by the metrics at each scrape.
        self.runs_total = 0
        self.deleted_total = 0

    def run(self, lost: threading.Event) -> None:
        """The leader's loop: sweep every interval until leadership is lost. The first sweep comes one
        interval after election, as the scheduled task of a Kafka controller does; expired tokens stop
        authenticating at their expiry anyway, so nothing waits on the sweep."""
        while not lost.wait(self._interval_s):
            try:
                self.sweep(lost)
            except (StoreUnavailable, ClusterMigrating) as exc:
                log.warning("sweep interrupted: %s", exc.message)

    def sweep(self, lost: threading.Event | None = None) -> int:
        if not self._writes_allowed():
            return 0  # the cluster moves to KRaft, whose controller expires tokens now (the cluster watch logs it)
        self.runs_total += 1
        now = self._clock.now_ms()
        doomed = token_rules.expired_tokens((stored.token for stored in self._view.tokens()), now)
        deleted = 0
        for start in range(0, len(doomed), BATCH):
            if lost is not None and lost.is_set():
                break  # leadership gone: another replica sweeps now
            batch = doomed[start : start + BATCH]
            if self._room is not None:
                batch = batch[: self._room()]
                if not batch:
                    log.warning(
                        "sweep paused with %d expired tokens left: the notification list has no room for their "
                        "deletions; the next sweep goes on",
                        len(doomed) - start,
                    )
                    break
            deleted += self._sweep_batch(batch)
        if deleted:
            log.info("sweep deleted %d expired tokens", deleted)
        return deleted

    def _sweep_batch(self, batch: list[TokenInformation]) -> int:
        """Delete a batch in one transaction (one audit commit before, one after). If any token changed
        since it was read, the whole transaction is refused; then each is deleted on its own, so the
        token that changed survives and the others still go."""
        current = self._store.get_many([token.token_id for token in batch])  # authoritative versions
        now = self._clock.now_ms()
        still = [stored for stored in current.values() if stored is not None and stored.token.is_expired(now)]
        if not still:
            return 0
        try:
            self._auditor.mutations(
                [_event(stored) for stored in still],
                lambda intents: self._store.delete_many(
                    [(s.token.token_id, s.version, intent) for s, intent in zip(still, intents, strict=True)]
                ),
            )
        except (ConcurrentModification, TokenNotFound):
            return sum(self._sweep_one(stored) for stored in still)
        for stored in still:
            self._deleted(stored.token.token_id)
        return len(still)

    def _sweep_one(self, judged: StoredToken) -> int:
        current = self._store.get(judged.token.token_id)
        if current is None or not current.token.is_expired(self._clock.now_ms()):
            return 0
        event = _event(current)
        try:
            self._auditor.mutation(event, self._deleting(current), succeeded=_succeeded(event))
        except (ConcurrentModification, TokenNotFound):
            return 0  # renewed or expired by a request meanwhile: that request wins
        self._deleted(current.token.token_id)
        return 1

    def _deleting(self, stored: StoredToken) -> Callable[[str], None]:
        def delete(intent: str) -> None:
            self._store.delete_many([(stored.token.token_id, stored.version, intent)])

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
