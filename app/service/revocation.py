"""Bulk revocation: expire at once every token of an owner and/or of a requester (an operator's answer to a
leaked credential), or the tokens whose owner's credentials or whose requester's grant were just removed.

Each token goes exactly as a single expire-now takes it: its znode deleted (guarded by the version read),
a change notification brokers honour, and a ``token.expire`` audit event (``details.reason`` says why),
with one ``token.revoke`` event summing up the whole. Tokens go in the batches the backend's admission cuts
(app/service/admission.py; ZooKeeper: one transaction each), with one audit commit before and one after each.
A token deleted meanwhile by someone else is skipped; a batch refused because a token in it changed or went is
retried token by token (the refused attempt stays on record as failed), so a concurrent renew cannot save a token
and a concurrent expire cannot fail the revoke. Each deletion carries the admission's charge (ZooKeeper: to its
token's requester's share, in the same transaction, as the sweep's do); a revocation is never refused for one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from app.domain import token_rules
from app.domain.acl import AclBinding
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Authorizer, Caller, Operation, ensure_cluster_permission
from app.domain.errors import ConcurrentModification, KtsError, TokenNotFound
from app.domain.revocation import RevocationReason, RevokeSelector, tokens_without_grant
from app.domain.token import TokenInformation
from app.service.admission import OPEN_ADMISSION, Admission, WriteCharge
from app.service.audit import Auditor
from app.service.ports import EXPIRE_NOW, StoredToken, TokenChange, TokenStore, TokenView


class TokenRevocation:
    def __init__(
        self,
        store: TokenStore,
        view: TokenView,
        *,
        authorizer: Authorizer,
        auditor: Auditor,
        admission: Admission = OPEN_ADMISSION,
    ) -> None:
        """``admission``: cuts the batches and charges the deletions (app/service/admission.py)."""
        self._store = store
        self._view = view
        self._authorizer = authorizer
        self._auditor = auditor
        self._admission = admission

    def revoke(self, caller: Caller, selector: RevokeSelector) -> list[str]:
        """``POST /v1/tokens/revoke``: for super users and principals with Alter on the cluster, never for a
        caller logged in with a token. Returns the ids of the tokens revoked."""
        summary = _summary(str(caller.principal), selector, RevocationReason.REQUEST)
        self._auditor.decided(summary, lambda: self._may_revoke(caller))
        return self.revoke_matching(selector, reason=RevocationReason.REQUEST, principal=str(caller.principal))

    def revoke_matching(self, selector: RevokeSelector, *, reason: RevocationReason, principal: str) -> list[str]:
        """Revoke every token ``selector`` matches, on behalf of ``principal``, already authorized."""
        self._view.catch_up()  # tokens made on another replica an instant ago are revoked too
        candidates = [stored for stored in self._view.related_to(selector.principals) if selector.matches(stored.token)]
        return self._revoke(candidates, _summary(principal, selector, reason), reason, principal)

    def revoke_lost_grants(self, removed: Iterable[AclBinding], *, principal: str) -> list[str]:
        """After ACLs were removed: revoke the tokens whose requester may no longer create them for their
        owner (``app.domain.revocation.tokens_without_grant``)."""
        removed = list(removed)
        lost = {token.token_id for token in tokens_without_grant(removed, self._tokens(), self._authorizer)}
        if not lost:
            return []
        candidates = [stored for stored in self._view.tokens() if stored.token.token_id in lost]
        summary = AuditEvent(
            Action.TOKEN_REVOKE,
            Outcome.PENDING,
            principal=principal,
            details={
                "reason": RevocationReason.ACL_DELETE.value,
                "acls": [
                    {
                        "resourceType": binding.pattern.resource_type,
                        "resourceName": binding.pattern.name,
                        "patternType": binding.pattern.pattern_type.value,
                        "principal": binding.entry.principal,
                        "host": binding.entry.host,
                        "operation": binding.entry.operation,
                    }
                    for binding in removed
                ],
            },
        )
        return self._revoke(candidates, summary, RevocationReason.ACL_DELETE, principal)

    def _tokens(self) -> list[TokenInformation]:
        self._view.catch_up()
        return [stored.token for stored in self._view.tokens()]

    def _may_revoke(self, caller: Caller) -> None:
        token_rules.ensure_may_request_tokens(caller)  # 64, as for create, renew and expire
        ensure_cluster_permission(
            self._authorizer, caller, Operation.ALTER, to="revoke tokens in bulk", login_required=True
        )

    def _revoke(
        self, candidates: list[StoredToken], summary: AuditEvent, reason: RevocationReason, principal: str
    ) -> list[str]:
        candidates = sorted(candidates, key=lambda stored: stored.token.token_id)

        def event(token: TokenInformation) -> AuditEvent:
            return AuditEvent(
                Action.TOKEN_EXPIRE,
                Outcome.PENDING,
                principal=principal,
                owner=str(token.owner),
                token_requester=str(token.token_requester),
                token_id=token.token_id,
                details={"expiryTimePeriodMs": -1, "reason": reason.value},
            )

        revoked: list[str] = []
        by_id = {stored.token.token_id: stored for stored in candidates}
        try:
            for batch in self._admission.deletion_batches(stored.token for stored in candidates):
                revoked += self._batch([by_id[token.token_id] for token in batch], event)
        except KtsError as exc:
            self._auditor.record(summary.ended(Outcome.FAILED, error=exc.name, revoked=len(revoked)))
            raise
        self._auditor.record(summary.ended(Outcome.SUCCEEDED, revoked=len(revoked)))
        return revoked

    def _batch(self, batch: list[StoredToken], event: Callable[[TokenInformation], AuditEvent]) -> list[str]:
        """One store write for the batch's tokens still there, each guarded by the version read now."""
        current = self._store.get_many([stored.token.token_id for stored in batch])
        present = [stored for stored in current.values() if stored is not None]
        if not present:
            return []
        charges = self._admission.deletion_charges(stored.token for stored in present)
        try:
            self._auditor.mutations(
                [event(stored.token) for stored in present],
                lambda intents: self._store.delete_many(
                    [(s.token.token_id, s.version, intent) for s, intent in zip(present, intents, strict=True)],
                    charges,
                ),
                succeeded=lambda done: done.ended(Outcome.SUCCEEDED, deleted=True),
            )
        except (ConcurrentModification, TokenNotFound):
            # A token in the batch was renewed or expired since it was read: take each on its own.
            return [stored.token.token_id for stored in present if self._one(stored.token, event)]
        self._admission.settle(charges)
        for stored in present:
            self._view.discard(stored.token.token_id)
        return [stored.token.token_id for stored in present]

    def _one(self, token: TokenInformation, event: Callable[[TokenInformation], AuditEvent]) -> bool:
        """Delete one token as an expire-now does (compare-and-set, retried on a lost race); False when it
        is already gone."""
        if self._store.get(token.token_id) is None:
            return False  # expired by someone else: nothing to revoke, nothing to record
        pending = event(token)
        charges: list[WriteCharge | None] = []

        def delete(stored: StoredToken) -> TokenChange[None]:
            charges.append(self._admission.deletion(stored.token))
            return TokenChange(None, None, EXPIRE_NOW, charges[-1])

        try:
            self._auditor.mutation(
                pending,
                lambda intent: self._store.change(token.token_id, delete, intent),
                succeeded=lambda _: pending.ended(Outcome.SUCCEEDED, deleted=True),
            )
        except TokenNotFound:
            return False
        self._admission.settle(charges[-1:])
        self._view.discard(token.token_id)
        return True


def _summary(principal: str, selector: RevokeSelector, reason: RevocationReason) -> AuditEvent:
    return AuditEvent(
        Action.TOKEN_REVOKE,
        Outcome.PENDING,
        principal=principal,
        owner=None if selector.owner is None else str(selector.owner),
        token_requester=None if selector.token_requester is None else str(selector.token_requester),
        details={"reason": reason.value},
    )
