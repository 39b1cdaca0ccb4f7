"""Applies a ``FailureThrottle`` (``app/domain/throttle.py``) to one kind of attempt, logins or token
verifies, and writes the audit records it plans: an attempt that opens a burst in full, the rest of the
burst as ``{"throttled": true, "attempts": n, ...}`` records of the same action.

A refused attempt raises ``TooManyAttempts`` (429 with Retry-After) before its credentials are looked at.
A summary written while serving another client's request carries the summarised client's address.

The composition root builds one guard per kind of attempt from the ``auth.failures.*`` settings (none when
turned off). The guard depends on the ``AttemptRule`` protocol, not on the throttle itself, and callers see
only ``admit``/``failed``/``succeeded``. The login guard also holds the per-account lockout
(``app/service/lockout.py``, ``auth.lockout.*``): then user names are the lockout's to count, and an attempt
for a locked account is refused (``AccountLocked``, 429) after the throttle has admitted it, counted in its
burst like the throttle's own refusals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.domain.errors import AccountLocked, TooManyAttempts
from app.domain.throttle import TOKEN_SUBJECT_PREFIX, Admission, AuditPlan, BurstSummary
from app.service.audit import Auditor, request_context
from app.service.lockout import ACCOUNT_PREFIX, AccountLocks


class AttemptRule(Protocol):
    """Decides which attempts go ahead and which records they leave (``app/domain/throttle.FailureThrottle``)."""

    def admit(self, address: str, subject: str | None) -> Admission: ...

    def failed(self, address: str, subject: str | None, *, count_subject: bool = True) -> AuditPlan: ...

    def succeeded(self, address: str, subject: str | None) -> None: ...

    def refuse(self, address: str, subject: str | None, retry_after_ms: int) -> Admission: ...

    def flush(self) -> list[BurstSummary]: ...


class AttemptGuard:
    def __init__(
        self, throttle: AttemptRule, auditor: Auditor, action: Action, *, lockout: AccountLocks | None = None
    ) -> None:
        self._throttle = throttle
        self._auditor = auditor
        self._action = action
        self._lockout = lockout

    def _account(self, subject: str | None, lockable: bool) -> str | None:
        """The account the lockout counts for ``subject``; None when it counts none (``lockable``: the
        attempt presents a password)."""
        if not lockable or self._lockout is None or subject is None or not subject.startswith(ACCOUNT_PREFIX):
            return None
        return subject

    def admit(
        self, address: str, subject: str | None, describe: Callable[[], AuditEvent], *, lockable: bool = False
    ) -> None:
        """Raise TooManyAttempts while ``address`` (claiming ``subject``) is throttled. ``describe`` builds
        the attempt's own denied event, called only when it has to be recorded."""
        admission = self._throttle.admit(address, subject)
        locked = False
        account = self._account(subject, lockable)
        if not admission.refused and account is not None and self._lockout is not None:
            wait_ms = self._lockout.wait_ms(account)
            if wait_ms:
                self._write(admission.audit, None)
                admission = self._throttle.refuse(address, subject, wait_ms)
                locked = True
        if not admission.refused:
            self._write(admission.audit, None)
            return
        retry_after_s = max(1, math.ceil(admission.retry_after_ms / 1000))
        extra = {"locked": True} if locked else {}
        self._write(
            admission.audit,
            lambda: describe().ended(
                Outcome.DENIED, throttled=True, attempts=1, retryAfterS=retry_after_s, **extra
            ),
        )
        raise AccountLocked(retry_after_s) if locked else TooManyAttempts(retry_after_s)

    def failed(self, address: str, subject: str | None, event: AuditEvent, *, lockable: bool = False) -> None:
        account = self._account(subject, lockable)
        self._write(self._throttle.failed(address, subject, count_subject=account is None), lambda: event)
        if account is not None and self._lockout is not None:
            self._lockout.failed(account)

    def succeeded(self, address: str, subject: str | None, *, lockable: bool = False) -> None:
        self._throttle.succeeded(address, subject)
        account = self._account(subject, lockable)
        if account is not None and self._lockout is not None:
            self._lockout.succeeded(account)

    def flush(self) -> None:
        """Record every attempt not yet recorded (at shutdown)."""
        self._write(AuditPlan(summaries=tuple(self._throttle.flush())), None)

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
        event = AuditEvent(
            self._action,
            Outcome.DENIED,
            principal=subject if subject.startswith("User:") else None,
            token_id=token_id,
            details={
                "throttled": True,
                "attempts": summary.attempts,
                "refused": summary.refused,
                "firstAttemptMs": summary.first_attempt_ms,
                "lastAttemptMs": summary.last_attempt_ms,
            },
        )
        reset = request_context.set(context)
        try:
            self._auditor.record(event)
        finally:
            request_context.reset(reset)
