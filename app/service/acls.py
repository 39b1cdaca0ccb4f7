"""ACL management: who may manage ACLs, validation, and writes that the writing replica reads at once."""

from __future__ import annotations

from collections.abc import Callable

from app.domain.acl import AccessControlEntry, AclBinding, AclFilter, ResourcePattern, validate_binding
from app.domain.authorization import CLUSTER_RESOURCE_NAME, Authorizer, Caller, Operation, ResourceType
from app.domain.errors import ClusterAuthorizationFailed, InvalidInput
from app.service.ports import AclStore, AclView


class AclService:
    def __init__(self, store: AclStore, view: AclView, *, authorizer: Authorizer) -> None:
        self._store = store
        self._view = view
        self._authorizer = authorizer

    def _require(self, caller: Caller, operation: Operation) -> None:
        # A leaked token must not be able to widen its own powers, so ACL changes need a login.
        if (caller.token_authenticated and operation is Operation.ALTER) or not self._authorizer.authorize(
            caller, operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
        ):
            raise ClusterAuthorizationFailed(
                f"{caller.principal} may not manage ACLs (needs {operation} on Cluster:{CLUSTER_RESOURCE_NAME})."
            )

    def create(self, caller: Caller, binding: AclBinding) -> AclBinding:
        self._require(caller, Operation.ALTER)
        validate_binding(binding)
        self._store.change(binding.pattern, lambda entries: entries | {binding.entry})
        self._view.refresh(binding.pattern)
        return binding

    def describe(self, caller: Caller, selector: AclFilter) -> list[AclBinding]:
        self._require(caller, Operation.DESCRIBE)
        return [binding for binding in self._view.snapshot().bindings() if selector.matches(binding)]

    def delete(self, caller: Caller, selector: AclFilter) -> list[AclBinding]:
        self._require(caller, Operation.ALTER)
        if selector.is_empty:
            raise InvalidInput("Refusing to delete every ACL: give at least one filter field.")
        patterns = sorted({b.pattern for b in self._view.snapshot().bindings() if selector.matches(b)})
        deleted: list[AclBinding] = []
        for pattern in patterns:
            # Re-evaluated against the stored entries, so ACLs added since the snapshot are judged too.
            before, after = self._store.change(pattern, _without_matching(pattern, selector))
            deleted += sorted(AclBinding(pattern, entry) for entry in before - after)
            self._view.refresh(pattern)
        return deleted


def _without_matching(
    pattern: ResourcePattern, selector: AclFilter
) -> Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]:
    def edit(entries: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
        return frozenset(entry for entry in entries if not selector.matches(AclBinding(pattern, entry)))

    return edit
