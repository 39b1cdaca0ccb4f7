"""The operators' way in while an account is locked: ``kts lockout release NAME`` and ``kts lockout list``
(app/cli/lockout.py), run where the server's own configuration is (a shell in the pod or on the host). No HTTP
login and no network address is involved, so nothing an attacker sends can refuse it or jam it: whoever can read
the server's configuration (its cluster login and its audit database) is an operator already.

A release ends the account's shared locks and has every replica forget its own lock and count of it, as a super
user's ``DELETE /v1/users/{name}/lockout`` does (``LockoutStore.release``). It is audited as ``lockout.release``
with the operating-system user who ran it, failing closed: the event is committed pending before anything is
released (no audit database, no release), then settled; a crash in between leaves it pending, and the running
replicas' reconciler settles it as ``failed``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext
from app.domain.clock import Clock
from app.domain.errors import KtsError
from app.domain.lockout import LockInForce, account_key
from app.service.audit import AuditLog
from app.service.lockout import ACCOUNT_PREFIX
from app.service.ports import LockListing, LockoutStore

# Naming the locks of a store that keeps keys alone: the account.lock events of the last lock duration are read
# newest first, this many a page, at most this many pages (an attacker spraying names writes one per lock).
NAMES_PAGE = 1_000
NAMES_PAGES = 20
CLOCK_SLACK_MS = 60_000  # the event is this replica's clock, the lock's start the store's


@dataclass(frozen=True, slots=True)
class Released:
    account: str
    was_locked: bool  # a shared lock was in force (a replica's own lock is lifted too, but only it knew of it)


class BreakGlass:
    def __init__(
        self, store: LockoutStore, listing: LockListing, audit_log: AuditLog, *, duration_ms: int, clock: Clock
    ) -> None:
        self._store = store
        self._listing = listing
        self._log = audit_log
        self._duration_ms = duration_ms
        self._clock = clock

    def release(self, user_name: str, *, operator: str) -> Released:
        """Release ``User:<user_name>`` on every replica for ``operator`` (the operating-system user). Raises
        StoreUnavailable when the audit database (then nothing was released) or the store cannot be written."""
        account = ACCOUNT_PREFIX + user_name
        event = AuditEvent(
            Action.LOCKOUT_RELEASE, Outcome.SUCCEEDED, owner=account, details={"operatingSystemUser": operator}
        )
        context = RequestContext()
        event_id = self._log.append(event.ended(Outcome.PENDING), context)
        try:
            was_locked = self._store.release(account_key(account), self._duration_ms)
        except KtsError as exc:
            with contextlib.suppress(KtsError):  # left pending otherwise: the reconciler settles it
                self._log.complete(event_id, event.ended(Outcome.FAILED, error=exc.name))
            raise
        self._log.complete(event_id, event.ended(Outcome.SUCCEEDED, wasLocked=was_locked))
        return Released(account, was_locked)

    def locks(self) -> list[LockInForce]:
        """The accounts locked, each once (by its longest lock: replicas that reached their share at once each
        shared one), soonest ending first; a lock whose store keeps its key alone is named by its
        ``account.lock`` event where one is found (else its account stays None)."""
        longest: dict[str, LockInForce] = {}
        for lock in sorted(self._listing.in_force_locks(), key=lambda lock: lock.remaining_ms):
            longest[lock.key] = lock  # the longest comes last
        locks = list(longest.values())
        unnamed = {lock.key for lock in locks if lock.account is None}
        if unnamed:
            names = self._names(unnamed)
            locks = [replace(lock, account=names.get(lock.key)) if lock.account is None else lock for lock in locks]
        return sorted(locks, key=lambda lock: lock.remaining_ms)

    def _names(self, keys: set[str]) -> dict[str, str]:
        since = self._clock.now_ms() - self._duration_ms - CLOCK_SLACK_MS
        names: dict[str, str] = {}
        before_id = None
        for _ in range(NAMES_PAGES):
            page = self._log.query(
                EventQuery(action=Action.ACCOUNT_LOCK.value, since=since, limit=NAMES_PAGE, before_id=before_id)
            )
            for stored in page:
                if stored.principal is not None and (key := account_key(stored.principal)) in keys:
                    names.setdefault(key, stored.principal)
            if len(page) < NAMES_PAGE or keys <= names.keys():
                break
            before_id = page[-1].id
        return names
