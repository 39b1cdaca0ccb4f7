"""The per-account lockout (app/domain/lockout.py) over the locks every replica shares (``LockoutStore``):
counts this replica's failed logins, publishes a lock when they reach this replica's share, releases a lock
found expired, and lets super users unlock an account. Each lock and each release is audited once: by the
replica that published it, and by the replica whose delete removed it.
"""

from __future__ import annotations

import logging

from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Authorizer, Caller
from app.domain.clock import Clock
from app.domain.errors import ClusterAuthorizationFailed, KtsError
from app.domain.lockout import AccountLockout
from app.domain.throttle import MAX_SUBJECT_LENGTH
from app.service.audit import Auditor
from app.service.ports import LockoutStore

log = logging.getLogger(__name__)


ACCOUNT_PREFIX = "User:"


def _bounded(account: str) -> str:
    return account[:MAX_SUBJECT_LENGTH]  # as the throttle keys it: absurd names share a key


class AccountLocks:
    def __init__(
        self, rule: AccountLockout, store: LockoutStore, *, auditor: Auditor, authorizer: Authorizer, clock: Clock
    ) -> None:
        self._rule = rule
        self._store = store
        self._auditor = auditor
        self._authorizer = authorizer
        self._clock = clock

    def wait_ms(self, account: str) -> int:
        """Milliseconds until ``account`` (``User:<name>``) may try again; 0 when it is not locked."""
        account = _bounded(account)
        published = self._store.locked_until(account)
        now = self._clock.now_ms()
        if published is not None and published <= now:
            self._release_expired(account, now)
            published = self._store.locked_until(account)
            if published is not None and published <= now:
                published = None  # one we could not delete: ended all the same
        return self._rule.wait_ms(account, published)

    def failed(self, account: str) -> None:
        account = _bounded(account)
        lock = self._rule.failed(account, self._store.replicas())
        if lock is None:
            return
        details: dict[str, object] = {
            "lockedUntilMs": lock.until_ms,
            "failures": lock.failures,
            "threshold": self._rule.policy.threshold,
            "replicas": self._store.replicas(),
        }
        try:
            self._store.publish(lock)
        except KtsError as exc:  # this replica refuses the account all the same
            log.warning("the lock of an account was kept by this replica only: %s", exc.message)
            details["published"] = False
        self._auditor.record(
            AuditEvent(Action.ACCOUNT_LOCK, Outcome.SUCCEEDED, principal=account, owner=account, details=details)
        )

    def succeeded(self, account: str) -> None:
        self._rule.succeeded(_bounded(account))

    def unlock(self, caller: Caller, user_name: str) -> bool:
        """Release ``User:<user_name>`` on every replica (super users only); whether it was locked."""
        account = _bounded(ACCOUNT_PREFIX + user_name)
        event = AuditEvent(
            Action.ACCOUNT_UNLOCK, Outcome.SUCCEEDED, principal=str(caller.principal), owner=account, details={}
        )
        self._auditor.decided(event, lambda: self._ensure_super_user(caller))
        locked = self.wait_ms(account) > 0
        self._store.release(account)
        self._rule.released(account)
        self._auditor.record(event.ended(Outcome.SUCCEEDED, reason="unlocked", wasLocked=locked))
        return locked

    def _ensure_super_user(self, caller: Caller) -> None:
        if caller.token_authenticated or not self._authorizer.is_super_user(caller.principal):
            raise ClusterAuthorizationFailed(f"{caller.principal} may not unlock accounts (super users only).")

    def _release_expired(self, account: str, now: int) -> None:
        try:
            released = self._store.release(account, expired_by_ms=now)
        except KtsError as exc:
            log.warning("an expired account lock could not be released now: %s", exc.message)
            return
        for until_ms in released:
            self._auditor.record(
                AuditEvent(
                    Action.ACCOUNT_UNLOCK,
                    Outcome.SUCCEEDED,
                    principal=account,
                    owner=account,
                    details={"reason": "expired", "lockedUntilMs": until_ms},
                )
            )
