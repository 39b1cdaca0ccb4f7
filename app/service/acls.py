"""ACL management: who may manage ACLs, validation, audited writes the writing replica reads at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.domain.acl import (
    AccessControlEntry,
    AclBinding,
    AclFilter,
    ResourcePattern,
    super_user_grant_warnings,
    validate_binding,
)
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Authorizer, Caller, Operation, ensure_cluster_permission
from app.domain.errors import InvalidInput
from app.domain.principal import KafkaPrincipal
from app.service.audit import Auditor
from app.service.ports import AclStore, AclView
from app.service.revocation import TokenRevocation

Entries = frozenset[AccessControlEntry]


@dataclass(frozen=True, slots=True)
class AddedAcl:
    """The ACL added, and sentences on what it allows that its author may not have meant."""

    binding: AclBinding
    warnings: tuple[str, ...] = ()


class AclService:
    def __init__(
        self,
        store: AclStore,
        view: AclView,
        *,
        authorizer: Authorizer,
        auditor: Auditor,
        super_users: Iterable[KafkaPrincipal] = (),
        tokens_for_super_users: bool = False,
        revocation: TokenRevocation | None = None,
    ) -> None:
        """With ``revocation`` (token.revoke.on.acl.delete=true), removing a CreateTokens grant revokes the
        tokens it let a requester make that the remaining ACLs no longer allow (app/domain/revocation.py)."""
        self._store = store
        self._view = view
        self._authorizer = authorizer
        self._auditor = auditor
        self._super_users = frozenset(super_users)
        self._tokens_for_super_users = tokens_for_super_users
        self._revocation = revocation

    def _may_manage(self, caller: Caller, operation: Operation) -> None:
        # Changes need a login (login_required): a leaked token must not be able to widen its own powers.
        ensure_cluster_permission(
            self._authorizer, caller, operation, to="manage ACLs", login_required=operation is Operation.ALTER
        )

    def create(self, caller: Caller, binding: AclBinding) -> AddedAcl:
        event = _event(Action.ACL_ADD, caller, binding.pattern, [binding.entry])
        self._auditor.decided(event, lambda: self._may_manage(caller, Operation.ALTER))
        validate_binding(binding)
        self._auditor.mutation(
            event,
            lambda intent: self._store.change(binding.pattern, lambda entries: entries | {binding.entry}, intent),
            succeeded=lambda _: event.ended(Outcome.SUCCEEDED),
        )
        self._view.refresh(binding.pattern)
        warnings = super_user_grant_warnings(
            binding, self._super_users, tokens_for_super_users=self._tokens_for_super_users
        )
        return AddedAcl(binding, tuple(warnings))

    def describe(self, caller: Caller, selector: AclFilter) -> list[AclBinding]:
        self._may_manage(caller, Operation.DESCRIBE)
        return [binding for binding in self._view.snapshot().bindings() if selector.matches(binding)]

    def delete(self, caller: Caller, selector: AclFilter) -> list[AclBinding]:
        """One audited change per resource pattern touched (each is its own ZooKeeper transaction)."""
        refused = AuditEvent(Action.ACL_REMOVE, Outcome.PENDING, principal=str(caller.principal))
        self._auditor.decided(refused, lambda: self._may_manage(caller, Operation.ALTER))
        if selector.is_empty:
            raise InvalidInput("Refusing to delete every ACL: give at least one filter field.")
        patterns = sorted({b.pattern for b in self._view.snapshot().bindings() if selector.matches(b)})
        removed = [binding for pattern in patterns for binding in self._remove(caller, pattern, selector)]
        if self._revocation is not None and removed:
            self._revocation.revoke_lost_grants(removed, principal=str(caller.principal))
        return removed

    def _remove(self, caller: Caller, pattern: ResourcePattern, selector: AclFilter) -> list[AclBinding]:
        matching = [b.entry for b in self._view.snapshot().bindings() if b.pattern == pattern and selector.matches(b)]
        event = _event(Action.ACL_REMOVE, caller, pattern, matching)

        def removed(result: tuple[Entries, Entries]) -> AuditEvent:
            return event.ended(Outcome.SUCCEEDED, removed=[_entry_details(e) for e in sorted(result[0] - result[1])])

        # Re-evaluated against the stored entries, so ACLs added since the snapshot are judged too.
        before, after = self._auditor.mutation(
            event,
            lambda intent: self._store.change(pattern, _without_matching(pattern, selector), intent),
            succeeded=removed,
        )
        self._view.refresh(pattern)
        return sorted(AclBinding(pattern, entry) for entry in before - after)


def _without_matching(pattern: ResourcePattern, selector: AclFilter) -> Callable[[Entries], Entries]:
    def edit(entries: Entries) -> Entries:
        return frozenset(entry for entry in entries if not selector.matches(AclBinding(pattern, entry)))

    return edit


def _entry_details(entry: AccessControlEntry) -> dict[str, str]:
    return {
        "principal": entry.principal,
        "host": entry.host,
        "operation": entry.operation,
        "permissionType": entry.permission,
    }


def _event(action: Action, caller: Caller, pattern: ResourcePattern, entries: list[AccessControlEntry]) -> AuditEvent:
    return AuditEvent(
        action,
        Outcome.PENDING,
        principal=str(caller.principal),
        details={
            "resourceType": pattern.resource_type,
            "resourceName": pattern.name,
            "patternType": pattern.pattern_type.value,
            "entries": [_entry_details(entry) for entry in sorted(entries)],
        },
    )
