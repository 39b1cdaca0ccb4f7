"""Applies a ``FailureThrottle`` (``app/domain/throttle.py``) to one kind of attempt, logins or token
verifies, and writes the audit records it plans: an attempt that opens a burst in full, the rest of the
burst as ``{"throttled": true, "attempts": n, ...}`` records of the same action. Failures that named no known
user or token join one burst per address, summarised with a few sample names.

A refused attempt raises ``TooManyAttempts`` (429 with Retry-After) before its credentials are looked at.
A summary written while serving another client's request carries the summarised client's address.

The composition root builds one guard per kind of attempt from the ``auth.failures.*`` settings (none when turned
off). The login guard also holds the per-account lockout (``app/service/lockout.py``, ``auth.lockout.*``): then
password logins are the lockout's to count. Such a login is refused (``AccountLocked``, 429) while its account is
locked, counted in its burst like the throttle's own refusals; otherwise its check waits its turn
(``app/service/check_gate.py``: one check per account at a time, each counted before the next runs), unless an
identical attempt's verdict answers it, or the verified-password cache does (``recall``). A super user's login from
an exempt address skips the lockout, not the throttle: its failures are charged to its (subject, address) pair, so
it is refused after ``auth.failures.max`` as a pair is anywhere; any other account is locked from an exempt address
as from anywhere.

``recall`` is the fast path of a client's many logins with its one password: after the lock is looked at, the
cache alone is asked whether these very credentials were accepted, the user's credentials as they stand now
(app/auth/basic.py). It checks no password: a password the cache does not hold (a guess, a typo, an old password
after a change, which changes the cache's key) gets no answer there and takes its turn in the gate, counted before
the next check, as before. So it lets no guess past the count; it only spares the right password the queue (and
the wait behind an attacker's guesses). A recalled login forgives its address's typos as a checked success does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.domain.errors import AccountLocked, NotAuthenticated, TooManyAttempts
from app.domain.lockout import account_key
from app.domain.throttle import TOKEN_SUBJECT_PREFIX, Admission, AuditPlan, BurstSummary, FailureThrottle
from app.service.audit import Auditor, request_context
from app.service.check_gate import CheckGate, Flight
from app.service.lockout import ACCOUNT_PREFIX, AccountLocks

T = TypeVar("T")

# How long a login waits for another check of the same account before it is told to retry.
CHECK_WAIT_S = 5.0
BUSY_RETRY_MS = 1_000
THROTTLED = "Too many failed attempts."


@dataclass(frozen=True, slots=True)
class PasswordLogin:
    """An attempt that presents a password for ``account`` (``User:<the whole name>``: the claimed subject may
    be cut short, the lockout's key never is)."""

    account: str
    password: str = field(repr=False)


Describe = Callable[[str], AuditEvent]
"""Builds an attempt's own denied event from the reason it was refused; called only when it is recorded."""

Recall = Callable[[], T | None]
"""The attempt's result when credentials already verified answer it, without checking a password; None when they
do not (no verdict: the counted check decides)."""


class AttemptGuard:
    def __init__(
        self,
        throttle: FailureThrottle,
        auditor: Auditor,
        action: Action,
        *,
        lockout: AccountLocks | None = None,
        wait_s: float = CHECK_WAIT_S,
    ) -> None:
        self._throttle = throttle
        self._auditor = auditor
        self._action = action
        self._lockout = lockout
        self._gate = CheckGate()
        self._wait_s = wait_s

    def attempt(
        self,
        address: str,
        subject: str | None,
        describe: Describe,
        check: Callable[[], T],
        *,
        password: PasswordLogin | None = None,
        recall: Recall[T] | None = None,
    ) -> T:
        """Run ``check`` (which raises NotAuthenticated to refuse) unless ``address`` (claiming ``subject``) is
        throttled or its account locked. ``password``: the attempt presents one (a Basic login), so the
        account lockout counts it; ``recall``: answers it from what was verified already, when it can (asked only
        under the lockout, once the account is known not to be locked)."""
        admission = self._throttle.admit(address, subject)
        if admission.refused:
            self._refused(admission, describe, locked=False)
        self._write(admission.audit, None)
        lockout = self._lockout
        if password is None or lockout is None or not password.account.startswith(ACCOUNT_PREFIX):
            return self._checked(address, subject, describe, check, count_subject=True)
        if lockout.exempt(address, password.account):
            return self._checked(address, subject, describe, check, count_subject=False, count_pair=True)
        return self._locked_check(lockout, address, subject, describe, check, password, recall)

    def flush(self) -> None:
        """Record every attempt not yet recorded (at shutdown)."""
        self._write(AuditPlan(summaries=tuple(self._throttle.flush())), None)

    # -- the checks

    def _checked(
        self,
        address: str,
        subject: str | None,
        describe: Describe,
        check: Callable[[], T],
        *,
        count_subject: bool,
        count_pair: bool | None = None,
    ) -> T:
        try:
            result = check()
        except NotAuthenticated as exc:
            self._failed(address, subject, describe, exc, count_subject=count_subject, count_pair=count_pair)
            raise
        self._throttle.succeeded(address, subject)
        return result

    def _locked_check(
        self,
        locks: AccountLocks,
        address: str,
        subject: str | None,
        describe: Describe,
        check: Callable[[], T],
        login: PasswordLogin,
        recall: Recall[T] | None,
    ) -> T:
        account = login.account
        key = account_key(account)
        digest: bytes | None = None
        deadline = time.monotonic() + self._wait_s
        while True:
            wait_ms = locks.wait_ms(key)
            if wait_ms:
                self._refuse(address, subject, describe, wait_ms, locked=True)
            if recall is not None and (recalled := recall()) is not None:
                # No password was checked, so there is nothing to count or to hold the next check for.
                locks.forgive(key, address)
                self._throttle.succeeded(address, subject)
                return recalled
            if digest is None:
                digest = self._gate.digest(key, login.password)
            flight, leading = self._gate.enter(key, digest)
            if leading:
                return self._lead(locks, flight, key, address, subject, account, describe, check)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not flight.done.wait(remaining):
                self._refuse(address, subject, describe, BUSY_RETRY_MS, locked=False)
            if flight.accepted is not None and flight.same_credentials(digest):
                if flight.accepted:  # just accepted: checking it again is cheap (the verified-password cache)
                    return self._checked(address, subject, describe, check, count_subject=False)
                refusal = flight.refusal or NotAuthenticated("Invalid user name or password.")
                # The same wrong password: answered by its verdict, neither checked nor counted again.
                self._failed(address, subject, describe, refusal, count_subject=False)
                raise NotAuthenticated(refusal.message, known=refusal.known)
            # Other credentials, or no verdict: take a turn.

    def _lead(
        self,
        locks: AccountLocks,
        flight: Flight,
        key: str,
        address: str,
        subject: str | None,
        account: str,
        describe: Describe,
        check: Callable[[], T],
    ) -> T:
        try:
            wait_ms = locks.begin(key)  # counted before it is checked
            if wait_ms:
                self._refuse(address, subject, describe, wait_ms, locked=True)
            try:
                result = check()
            except NotAuthenticated as exc:
                locks.failed(key, account, address)  # before the next check of the account starts
                flight.accepted, flight.refusal = False, exc
                self._failed(address, subject, describe, exc, count_subject=False)
                raise
            except BaseException:
                locks.abandoned(key)
                raise
            locks.succeeded(key, address)
            flight.accepted = True
            self._throttle.succeeded(address, subject)
            return result
        finally:
            self._gate.leave(key, flight)

    # -- refusals and records

    def _failed(
        self,
        address: str,
        subject: str | None,
        describe: Describe,
        exc: NotAuthenticated,
        *,
        count_subject: bool,
        count_pair: bool | None = None,
    ) -> None:
        plan = self._throttle.failed(
            address, subject, count_subject=count_subject, count_pair=count_pair, known=exc.known
        )
        self._write(plan, lambda: describe(exc.message))

    def _refuse(self, address: str, subject: str | None, describe: Describe, wait_ms: int, *, locked: bool) -> None:
        self._refused(self._throttle.refuse(address, subject, wait_ms), describe, locked=locked)

    def _refused(self, admission: Admission, describe: Describe, *, locked: bool) -> None:
        retry_after_s = max(1, math.ceil(admission.retry_after_ms / 1000))
        extra = {"locked": True} if locked else {}
        self._write(
            admission.audit,
            lambda: describe(THROTTLED).ended(
                Outcome.DENIED, throttled=True, attempts=1, retryAfterS=retry_after_s, **extra
            ),
        )
        raise AccountLocked(retry_after_s) if locked else TooManyAttempts(retry_after_s)

    def _write(self, plan: AuditPlan, attempt: Callable[[], AuditEvent] | None) -> None:
        if plan.record_attempt and attempt is not None:
            self._auditor.record(attempt())
        for summary in plan.summaries:
            self._record_summary(summary)

    def _record_summary(self, summary: BurstSummary) -> None:
        current = request_context.get()
        context = current if current.client_address == summary.address else RequestContext(None, summary.address)
        subject = summary.subject or ""
        token_id = subject.removeprefix(TOKEN_SUBJECT_PREFIX) if subject.startswith(TOKEN_SUBJECT_PREFIX) else None
        details: dict[str, object] = {
            "throttled": True,
            "attempts": summary.attempts,
            "refused": summary.refused,
            "firstAttemptMs": summary.first_attempt_ms,
            "lastAttemptMs": summary.last_attempt_ms,
        }
        if summary.unknown_names:
            details.update(unknownNames=True, sampleNames=list(summary.samples))
        event = AuditEvent(
            self._action,
            Outcome.DENIED,
            principal=subject if subject.startswith(ACCOUNT_PREFIX) else None,
            token_id=token_id,
            details=details,
        )
        reset = request_context.set(context)
        try:
            self._auditor.record(event)
        finally:
            request_context.reset(reset)
