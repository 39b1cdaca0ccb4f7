"""``audit.retention.days``: the leader deletes audit events older than that, in batches, so that the audit
database does not grow for ever. Pending events are never deleted (the reconciler settles them first).

Each batch is its own transaction of at most ``batch`` rows, so a first run over years of events neither holds
a long transaction nor stalls the writers; the run stops between batches when leadership is lost.
"""

from __future__ import annotations

import logging
import threading

from app.domain.clock import Clock
from app.domain.errors import KtsError
from app.service.audit import AuditLog

log = logging.getLogger(__name__)

DAY_MS = 86_400_000
BATCH = 1_000
INTERVAL_MS = 3_600_000


class AuditRetention:
    def __init__(
        self, audit_log: AuditLog, clock: Clock, *, days: int, batch: int = BATCH, interval_ms: int = INTERVAL_MS
    ) -> None:
        if days < 1 or batch < 1 or interval_ms < 1:
            raise ValueError("audit retention needs at least a day, a batch of one and an interval of 1 ms")
        self._log = audit_log
        self._clock = clock
        self._days = days
        self._batch = batch
        self._interval_ms = interval_ms

    def apply(self, lost: threading.Event | None = None) -> int:
        """Delete every settled event older than the retention, batch by batch; how many."""
        cutoff = self._clock.now_ms() - self._days * DAY_MS
        deleted = 0
        while lost is None or not lost.is_set():
            count = self._log.delete_before(cutoff, self._batch)
            deleted += count
            if count < self._batch:
                break
        if deleted:
            log.info("deleted %d audit events older than %d days", deleted, self._days)
        return deleted

    def run(self, lost: threading.Event) -> None:
        """The leader's duty: ``apply`` at once, then every interval, until ``lost`` is set."""
        while not lost.is_set():
            try:
                self.apply(lost)
            except KtsError as exc:
                log.warning("old audit events could not be deleted now: %s", exc.message)
            lost.wait(self._interval_ms / 1000)
