"""The expiry sweep: decide from the cache which tokens are past expiry or maximum, then delete each one
only if its znode is still at the version judged (a renew that lands first wins), with its notification
and audit event. Running it twice, or on two replicas at once, is harmless."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from app.domain import token_rules
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.clock import Clock
from app.domain.errors import ConcurrentModification, StoreUnavailable, TokenNotFound
from app.service.audit import Auditor
from app.service.ports import StoredToken, TokenStore, TokenView

log = logging.getLogger(__name__)


class Sweeper:
    def __init__(self, store: TokenStore, view: TokenView, *, auditor: Auditor, clock: Clock, interval_ms: int) -> None:
        self._store = store
        self._view = view
        self._auditor = auditor
        self._clock = clock
        self._interval_s = interval_ms / 1000
        self.deleted_total = 0

    def run(self, lost: threading.Event) -> None:
        """The leader's loop: sweep every interval until leadership is lost. The first sweep comes one
        interval after election, as the scheduled task of a Kafka controller does; expired tokens stop
        authenticating at their expiry anyway, so nothing waits on the sweep."""
        while not lost.wait(self._interval_s):
            try:
                self.sweep(lost)
            except StoreUnavailable as exc:
                log.warning("sweep interrupted: %s", exc.message)

    def sweep(self, lost: threading.Event | None = None) -> int:
        now = self._clock.now_ms()
        doomed = token_rules.expired_tokens((stored.token for stored in self._view.tokens()), now)
        deleted = 0
        for token in doomed:
            if lost is not None and lost.is_set():
                break  # leadership gone: another replica sweeps now
            current = self._store.get(token.token_id)  # the authoritative version, not the cache's
            if current is None or not current.token.is_expired(self._clock.now_ms()):
                continue
            event = AuditEvent(
                Action.TOKEN_DELETE_BY_SWEEP,
                Outcome.PENDING,
                owner=str(token.owner),
                token_requester=str(token.token_requester),
                token_id=token.token_id,
                details={
                    "expiryTimestamp": current.token.expiry_timestamp,
                    "maxTimestamp": current.token.max_timestamp,
                },
            )
            try:
                self._auditor.mutation(event, _deleting(self._store, current), succeeded=_succeeded(event))
            except (ConcurrentModification, TokenNotFound):
                continue  # renewed or expired by a request meanwhile: that request wins
            deleted += 1
            self.deleted_total += 1  # counted at once: a later failure must not hide what was done
            self._view.discard(token.token_id)
        if deleted:
            log.info("sweep deleted %d expired tokens", deleted)
        return deleted


def _deleting(store: TokenStore, stored: StoredToken) -> Callable[[str], None]:
    def delete(intent: str) -> None:
        store.delete(stored.token.token_id, stored.version, intent)

    return delete


def _succeeded(event: AuditEvent) -> Callable[[None], AuditEvent]:
    return lambda _: event.ended(Outcome.SUCCEEDED)
