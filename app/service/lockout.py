"""The per-account lockout (app/domain/lockout.py) over the locks every replica shares (``LockoutStore``): counts
this replica's password checks and failures, shares a lock when they reach this replica's share, says so when it
could not, lets super users unlock an account, and (on the leader) deletes ended locks.

Audited: ``account.lock`` for each lock (``"shared": false`` with the reason when it stayed this replica's own),
``account.unlock`` for a super user's unlock (what this replica knew, and whether the release reached every
replica), and one ``account.unlock`` with ``"reason": "expired"`` for each run of the leader that deleted ended
locks.

Exempt addresses (``auth.lockout.exempt.addresses``, none by default) exempt super users' accounts alone: a super
user's login from one is neither counted nor refused by the lock (the throttle's per-pair limit still applies to it,
app/service/attempts.py); every other account is locked from there as from anywhere. The operators' way in needs no
address: ``kts lockout release``, run where the server's configuration is (app/service/break_glass.py).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Authorizer, Caller
from app.domain.errors import ClusterAuthorizationFailed, InvalidPrincipal, KtsError
from app.domain.lockout import AccountLockout, ExemptAddresses, Lock, account_key
from app.domain.principal import KafkaPrincipal
from app.service.audit import Auditor
from app.service.ports import LockoutStore

log = logging.getLogger(__name__)

ACCOUNT_PREFIX = "User:"
LIMIT_REACHED = "limit"  # the store holds as many locks in force as it may
STORE_UNAVAILABLE = "unavailable"  # the store could not be written


@dataclass(frozen=True, slots=True)
class Unlocked:
    """What an unlock did: ``was_locked``, a lock this replica knew of was in force (shared, or its own);
    ``not_shared``, that lock was this replica's own, which it could not share; ``every_replica``, the release
    reached every replica (False: the store could not be written, so only this replica's own lock was lifted)."""

    was_locked: bool
    not_shared: bool
    every_replica: bool


class AccountLocks:
    def __init__(
        self,
        rule: AccountLockout,
        store: LockoutStore,
        *,
        auditor: Auditor,
        authorizer: Authorizer,
        exempt: ExemptAddresses | None = None,
    ) -> None:
        self._rule = rule
        self._store = store
        self._auditor = auditor
        self._authorizer = authorizer
        self._exempt = exempt or ExemptAddresses(())
        store.on_released(rule.released)

    def exempt(self, address: str, account: str) -> bool:
        """Whether a login as ``account`` (``User:<name>``) from ``address`` skips the lock: a super user's account
        from an exempt address only."""
        if address not in self._exempt:
            return False
        try:
            principal = KafkaPrincipal.parse(account)
        except InvalidPrincipal:
            return False
        return self._authorizer.is_super_user(principal)

    def wait_ms(self, key: str) -> int:
        """Milliseconds until the account kept under ``key`` may try again; 0 when it is not locked."""
        return max(self._store.locked_ms(key), self._rule.own_lock_ms(key))

    def begin(self, key: str) -> int:
        """Reserve a password check (0), or the milliseconds until one may run (locked)."""
        shared = self._store.locked_ms(key)
        return shared or self._rule.begin(key, self._store.replicas())

    def failed(self, key: str, account: str, address: str) -> None:
        lock = self._rule.failed(key, account, address, self._store.replicas())
        if lock is not None:
            self._lock(lock)

    def succeeded(self, key: str, address: str) -> None:
        self._rule.succeeded(key, address)

    def forgive(self, key: str, address: str) -> None:
        """The right password from ``address``, answered without a check (no ``begin`` to settle)."""
        self._rule.forgive(key, address)

    def abandoned(self, key: str) -> None:
        self._rule.abandoned(key)

    def _lock(self, lock: Lock) -> None:
        details: dict[str, object] = {
            "failures": lock.failures,
            "threshold": self._rule.policy.threshold,
            "replicas": self._store.replicas(),
            "durationMs": lock.duration_ms,
        }
        try:
            shared = self._store.share(lock)
            reason = None if shared else LIMIT_REACHED
        except KtsError as exc:  # this replica refuses the account all the same
            log.warning("the lock of an account was kept by this replica only: %s", exc.message)
            shared, reason = False, STORE_UNAVAILABLE
        if shared:
            self._rule.shared(lock.key)
        details["shared"] = shared
        if reason is not None:
            details["notSharedBecause"] = reason
        self._auditor.record(
            AuditEvent(
                Action.ACCOUNT_LOCK, Outcome.SUCCEEDED, principal=lock.account, owner=lock.account, details=details
            )
        )

    def unlock(self, caller: Caller, user_name: str) -> Unlocked:
        """Release ``User:<user_name>`` on every replica (super users only)."""
        account = ACCOUNT_PREFIX + user_name
        event = AuditEvent(
            Action.ACCOUNT_UNLOCK, Outcome.SUCCEEDED, principal=str(caller.principal), owner=account, details={}
        )
        self._auditor.decided(event, lambda: self._ensure_super_user(caller))
        key = account_key(account)
        own = self._rule.own_lock_ms(key) > 0
        shared = self._store.locked_ms(key) > 0
        every_replica = True
        try:
            shared = self._store.release(key, self._rule.policy.duration_ms) or shared
        except KtsError as exc:
            log.warning("an unlock could not reach the other replicas: %s", exc.message)
            every_replica = False
        self._rule.released(key)
        result = Unlocked(was_locked=own or shared, not_shared=own, every_replica=every_replica)
        self._auditor.record(
            event.ended(
                Outcome.SUCCEEDED,
                reason="unlocked",
                wasLocked=result.was_locked,
                notShared=result.not_shared,
                everyReplica=result.every_replica,
            )
        )
        return result

    def remove_ended(self) -> int:
        """Delete the shared locks that have ended (the leader's duty); how many."""
        removed = self._store.remove_ended()
        if removed:
            self._auditor.record(
                AuditEvent(Action.ACCOUNT_UNLOCK, Outcome.SUCCEEDED, details={"reason": "expired", "locks": removed})
            )
        return removed

    def run_cleanup(self, lost: threading.Event, interval_ms: int) -> None:
        """The leader's duty: ``remove_ended`` at once, then every ``interval_ms``, until ``lost`` is set."""
        while not lost.is_set():
            try:
                self.remove_ended()
            except KtsError as exc:
                log.warning("ended account locks could not be deleted now: %s", exc.message)
            lost.wait(interval_ms / 1000)

    def _ensure_super_user(self, caller: Caller) -> None:
        if caller.token_authenticated or not self._authorizer.is_super_user(caller.principal):
            raise ClusterAuthorizationFailed(f"{caller.principal} may not unlock accounts (super users only).")
