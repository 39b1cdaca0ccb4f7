"""The audit protocol on a cluster whose changes cannot carry an intent marker (the Kafka protocol: no
ZooKeeper transaction to create a marker with the change, and the controller picks the token id).

The promise is the same as with ZooKeeper (app/service/audit.py): no token exists on the cluster that the
audit trail will not show once it settles, even when a replica is killed at any instant between the decision,
the RPC and the audit row. It is the Kafka-protocol backend's reconciler, over the audit database every replica
shares (app/storage/sql/). The request path, with the auditor's ``mutation``:

1. Decide; a refusal is recorded as ``denied``.
2. Append the event as ``pending`` and commit (503 if the database cannot take it: nothing was done).
3. The RPC. Its ``intent`` argument is the pending event's id.
4. A create records the cluster's token id with who asked and the event id (app/storage/sql/token_requesters.py,
   ``record``); any other change marks its event applied (app/storage/sql/intent_marks.py). Best effort.
5. Complete the event as ``succeeded`` naming the cluster's token id (or ``failed``/``denied``); clear the mark.

A replica killed before 2 did nothing. Killed after 2, its event stays pending, and the reconciler, run by
the leader, settles it once it is older than the grace period (requests still in flight are younger) by what
the cluster shows (app/domain/audit_settlement.py): a pending create is ``succeeded`` with the token step 4
recorded for it, else with a token on the cluster that fits it and that no event names (claimed in one
transaction with the event's completion, so no token is claimed twice), else ``failed``; a pending renew or
expire is ``succeeded`` when marked, else by the token's state now; any other change by its mark (or by
``judge_other``, which can ask the cluster). Then it adopts: a token kts's own principal made that no event
names (an RPC that landed after its event was settled ``failed``, a lost row, a token someone made with kts's
credentials) gets the create event that names it if there is one, else a reconstructed ``token.create``
event (``"reconstructed": true``) from the cluster's record of it. So every token kts's principal holds on
the cluster has a ``succeeded`` create event within a grace period and an interval.

A mark follows its change, so a replica killed between an ACL or credential change and its mark leaves that
event to be settled ``failed`` unless ``judge_other`` looks at the cluster; token changes never depend on marks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.domain import audit_settlement
from app.domain.audit import Action, AuditEvent, Outcome, StoredEvent
from app.domain.audit_settlement import SKEW_MS, PendingCreate
from app.domain.clock import Clock
from app.domain.errors import KtsError
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.service.audit import RECONCILE_GRACE_MS, AuditLog, IntentStore
from app.storage.sql.token_requesters import NamedCreate

log = logging.getLogger(__name__)

RECONCILE_INTERVAL_S = 30.0


class ClusterTokens(Protocol):
    def list_tokens(self) -> list[TokenInformation]:
        """Every token on the cluster as the cluster records it: the requester is whoever sent the create
        (kts's own principal for the tokens kts made)."""
        ...


class TokenLedger(Protocol):
    """Which of kts's tokens the trail already shows, and the writes that settle the rest atomically."""

    def tokens_of_events(self, event_ids: Sequence[int]) -> dict[int, str]: ...

    def recorded(self, token_ids: Sequence[str]) -> set[str]: ...

    def created_events(self, token_ids: Sequence[str]) -> dict[str, NamedCreate]: ...

    def adopt(self, token: TokenInformation, named: NamedCreate) -> bool: ...

    def claim(self, event_id: int, token: TokenInformation, requester: str, settled: AuditEvent) -> bool: ...

    def reconstruct(self, token: TokenInformation, event: AuditEvent) -> int | None: ...

    def forget_older_than(self, age_ms: int) -> int: ...


# What the reconciler does with pending events of other actions (ACLs, credentials): their outcome from the
# cluster's state, or None to leave them pending (the adapter that makes those changes knows how to look).
OtherJudge = Callable[[StoredEvent], Outcome | None]


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What one pass did."""

    applied: int = 0  # pending events settled succeeded
    not_applied: int = 0  # pending events settled failed
    left_pending: int = 0  # pending events the judge of other actions could not settle yet
    adopted: int = 0  # tokens recorded under the create event that already named them
    reconstructed: int = 0  # tokens given a reconstructed create event


class ClusterAuditReconciler:
    def __init__(
        self,
        audit_log: AuditLog,
        ledger: TokenLedger,
        cluster: ClusterTokens,
        marks: IntentStore,
        *,
        clock: Clock,
        own_principal: Callable[[], KafkaPrincipal],
        default_renew_ms: int,
        grace_ms: int = RECONCILE_GRACE_MS,
        interval_s: float = RECONCILE_INTERVAL_S,
        skew_ms: int = SKEW_MS,
        judge_other: OtherJudge | None = None,
        forget_after_ms: int | None = None,
    ) -> None:
        self._log = audit_log
        self._ledger = ledger
        self._cluster = cluster
        self._marks = marks
        self._clock = clock
        self._own_principal = own_principal
        self._default_renew_ms = default_renew_ms
        self._grace_ms = grace_ms
        self._interval_s = interval_s
        self._skew_ms = skew_ms
        self._judge_other = judge_other
        self._forget_after_ms = forget_after_ms

    def run(self, lost: threading.Event) -> None:
        """The leader's duty: a pass at once, then one every interval, until leadership is lost."""
        while not lost.is_set():
            try:
                self.reconcile()
            except KtsError as exc:
                log.warning("audit reconciliation postponed: %s", exc.message)
            lost.wait(self._interval_s)

    def reconcile(self) -> Reconciliation:
        self._own = self._own_principal()  # known once the cluster has answered who kts is
        now = self._clock.now_ms()
        cutoff = now - self._grace_ms
        pending = self._log.pending(older_than_ms=cutoff)
        tokens = self._cluster.list_tokens()
        by_id = {token.token_id: token for token in tokens}
        ours = [token for token in tokens if token.token_requester == self._own]
        recorded = self._ledger.recorded([token.token_id for token in ours])
        unclaimed = [token for token in ours if token.token_id not in recorded]

        creates = [stored for stored in pending if stored.action == Action.TOKEN_CREATE.value]
        others = [stored for stored in pending if stored.action != Action.TOKEN_CREATE.value]
        applied, not_applied, claimed = self._settle_creates(creates, unclaimed)
        changes, left_pending = self._settle_changes(others, by_id, self._marks.existing([s.id for s in others]))
        applied += sum(1 for _, event in changes if event.outcome is Outcome.SUCCEEDED)
        not_applied += sum(1 for _, event in changes if event.outcome is not Outcome.SUCCEEDED)
        if changes:
            self._log.complete_many(changes)
        # Adopt only tokens older than the grace period (a younger one may be a create still in flight, whose own
        # request records it) and not yet expired: an expired token can neither log in nor be renewed, and kts's
        # own start-up probes (a minute's life, app/storage/kafka/cluster.py) are all expired by then.
        orphans = [
            t for t in unclaimed if t.token_id not in claimed and t.issue_timestamp < cutoff and t.authenticates_at(now)
        ]
        adopted, reconstructed = self._adopt(orphans)
        self._clear_marks()
        if self._forget_after_ms is not None:
            # No token outlives its maximum lifetime: older records name tokens long gone (their events remain).
            self._ledger.forget_older_than(self._forget_after_ms)
        outcome = Reconciliation(applied, not_applied, left_pending, adopted, reconstructed)
        if applied or not_applied or adopted or reconstructed:
            log.warning(
                "reconciled the audit trail with the cluster: %d pending events applied, %d not applied, "
                "%d tokens adopted, %d given a reconstructed create event",
                applied,
                not_applied,
                adopted,
                reconstructed,
            )
        return outcome

    def _settle_creates(
        self, creates: list[StoredEvent], unclaimed: list[TokenInformation]
    ) -> tuple[int, int, set[str]]:
        applied = not_applied = 0
        claimed: set[str] = set()
        named = self._ledger.tokens_of_events([stored.id for stored in creates])
        failures: list[tuple[int, AuditEvent]] = []
        asked: list[PendingCreate] = []
        for stored in creates:
            if stored.id in named:  # the request recorded its token, then died before completing the event
                done = _settled(stored, Outcome.SUCCEEDED, token_id=named[stored.id])
                applied += self._log.complete_many([(stored.id, done)])
                continue
            create = audit_settlement.pending_create(stored.id, stored.timestamp, stored.owner, stored.details)
            if create is None:
                failures.append((stored.id, _settled(stored, Outcome.FAILED)))
            else:
                asked.append(create)
        matches = audit_settlement.match_creates(asked, unclaimed, own=self._own, skew_ms=self._skew_ms)
        by_event = {stored.id: stored for stored in creates}
        for create in asked:
            stored = by_event[create.event_id]
            token = matches.get(create.event_id)
            if token is None:
                failures.append((stored.id, _settled(stored, Outcome.FAILED)))
                continue
            settled = _settled(
                stored,
                Outcome.SUCCEEDED,
                token_id=token.token_id,
                details={
                    "issueTimestamp": token.issue_timestamp,
                    "expiryTimestamp": token.expiry_timestamp,
                    "maxTimestamp": token.max_timestamp,
                },
            )
            requester = stored.token_requester or str(self._own)
            if self._ledger.claim(stored.id, token, requester, settled):
                applied += 1
                claimed.add(token.token_id)
        if failures:
            not_applied += self._log.complete_many(failures)
        return applied, not_applied, claimed

    def _settle_changes(
        self, changes: list[StoredEvent], tokens: dict[str, TokenInformation], marked: set[int]
    ) -> tuple[list[tuple[int, AuditEvent]], int]:
        settled: list[tuple[int, AuditEvent]] = []
        left = 0
        for stored in changes:
            outcome = Outcome.SUCCEEDED if stored.id in marked else self._judge(stored, tokens)
            if outcome is None:
                left += 1
                continue
            token = tokens.get(stored.token_id or "")
            extra = {} if token is None else {"expiryTimestamp": token.expiry_timestamp}
            settled.append((stored.id, _settled(stored, outcome, details=extra)))
        return settled, left

    def _judge(self, stored: StoredEvent, tokens: dict[str, TokenInformation]) -> Outcome | None:
        token = tokens.get(stored.token_id or "")
        if stored.action == Action.TOKEN_RENEW.value:
            shows = audit_settlement.renew_shows(
                token,
                event_timestamp=stored.timestamp,
                renew_period_ms=_int(stored.details.get("renewTimePeriodMs"), -1),
                default_renew_ms=self._default_renew_ms,
                skew_ms=self._skew_ms,
            )
        elif stored.action == Action.TOKEN_EXPIRE.value:
            shows = audit_settlement.expire_shows(
                token,
                event_timestamp=stored.timestamp,
                expiry_period_ms=_int(stored.details.get("expiryTimePeriodMs"), -1),
                landing_ms=self._grace_ms,
                skew_ms=self._skew_ms,
            )
        else:  # unmarked: not applied, unless the judge finds otherwise
            return Outcome.FAILED if self._judge_other is None else self._judge_other(stored)
        return Outcome.SUCCEEDED if shows else Outcome.FAILED

    def _clear_marks(self) -> None:
        """Marks of settled events (their request died before clearing them, or this pass settled them)."""
        marked = [event_id for mark in self._marks.marks() for event_id in mark]  # one event each here
        settled = [event_id for event_id in marked if self._log.is_pending(event_id) is not True]
        if settled:
            self._marks.clear_many(settled)

    def _adopt(self, orphans: list[TokenInformation]) -> tuple[int, int]:
        adopted = reconstructed = 0
        named = self._ledger.created_events([token.token_id for token in orphans])
        for token in orphans:
            if token.token_id in named:
                adopted += self._ledger.adopt(token, named[token.token_id])
                continue
            event = AuditEvent(
                Action.TOKEN_CREATE,
                Outcome.SUCCEEDED,
                owner=str(token.owner),
                token_requester=str(token.token_requester),
                token_id=token.token_id,
                details={
                    "reconciled": True,
                    "reconstructed": True,
                    "renewers": [str(renewer) for renewer in token.renewers],
                    "issueTimestamp": token.issue_timestamp,
                    "expiryTimestamp": token.expiry_timestamp,
                    "maxTimestamp": token.max_timestamp,
                },
            )
            if self._ledger.reconstruct(token, event) is not None:
                reconstructed += 1
        return adopted, reconstructed


def _settled(
    stored: StoredEvent, outcome: Outcome, *, token_id: str | None = None, details: Mapping[str, object] | None = None
) -> AuditEvent:
    return AuditEvent(
        action=Action(stored.action),
        outcome=outcome,
        token_id=token_id or stored.token_id,
        details={**stored.details, "reconciled": True, **(details or {})},
    )


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


__all__ = [
    "ClusterAuditReconciler",
    "ClusterTokens",
    "NamedCreate",
    "OtherJudge",
    "Reconciliation",
    "TokenLedger",
]
