"""ACLs through the Kafka protocol: CreateAcls, DeleteAcls and DescribeAcls (v3, which has the ``User`` resource
type), as kafka-python's message classes encode them, and the replica's ACL cache fed by DescribeAcls (read at
start, every ``cluster.cache.refresh.ms``, and after each of this replica's writes).

Kafka's numeric codes for resource types, pattern types, operations and permissions (the constants of
``org.apache.kafka.common.resource`` and ``.acl``) are mapped to kts's names here; an ACL of a kind kts does not
know (a future resource type) is kept out of the cache with a warning, as an unreadable znode is.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from kafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from app.domain.acl import AccessControlEntry, AclSnapshot, PatternType, ResourcePattern
from app.storage.kafka.errors import check
from app.storage.kafka.ports import IntentMarks
from app.storage.kafka.refresh_outage import RefreshOutage
from app.storage.kafka.wire import KafkaWire

log = logging.getLogger(__name__)
Entries = frozenset[AccessControlEntry]
ACL_API_VERSION: Final = 3  # the first with the User resource type (KIP-373)

RESOURCE_TYPES: Final = {2: "Topic", 3: "Group", 4: "Cluster", 5: "TransactionalId", 6: "DelegationToken", 7: "User"}
PATTERN_TYPES: Final = {3: PatternType.LITERAL, 4: PatternType.PREFIXED}
OPERATIONS: Final = {
    2: "All",
    3: "Read",
    4: "Write",
    5: "Create",
    6: "Delete",
    7: "Alter",
    8: "Describe",
    9: "ClusterAction",
    10: "DescribeConfigs",
    11: "AlterConfigs",
    12: "IdempotentWrite",
    13: "CreateTokens",
    14: "DescribeTokens",
    15: "TwoPhaseCommit",
}
PERMISSIONS: Final = {2: "Deny", 3: "Allow"}
ANY: Final = 1


def _code(table: dict[int, Any], value: object, what: str) -> int:
    for code, name in table.items():
        if name == value:
            return code
    raise ValueError(f"Kafka has no {what} {value!r}")


def _entry_codes(pattern: ResourcePattern, entry: AccessControlEntry) -> dict[str, Any]:
    return {
        "resource_type": _code(RESOURCE_TYPES, pattern.resource_type, "resource type"),
        "resource_name": pattern.name,
        "resource_pattern_type": _code(PATTERN_TYPES, pattern.pattern_type, "pattern type"),
        "principal": entry.principal,
        "host": entry.host,
        "operation": _code(OPERATIONS, entry.operation, "operation"),
        "permission_type": _code(PERMISSIONS, entry.permission, "permission"),
    }


class KafkaAcls:
    def __init__(self, wire: KafkaWire) -> None:
        self._wire = wire

    def describe(self) -> dict[ResourcePattern, Entries]:
        request = DescribeAclsRequest(
            resource_type_filter=ANY,
            resource_name_filter=None,
            pattern_type_filter=ANY,
            principal_filter=None,
            host_filter=None,
            operation=ANY,
            permission_type=ANY,
            min_version=ACL_API_VERSION,
        )
        response = self._wire.send(request)
        check(response.error_code, "Describe ACLs")
        found: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for resource in response.resources:
            kind = RESOURCE_TYPES.get(resource.resource_type)
            pattern_type = PATTERN_TYPES.get(resource.pattern_type)
            if kind is None or pattern_type is None:
                log.warning("ignoring ACLs of a resource kind kts does not know (%s)", resource.resource_type)
                continue
            pattern = ResourcePattern(kind, resource.resource_name, pattern_type)
            for acl in resource.acls:
                operation, permission = OPERATIONS.get(acl.operation), PERMISSIONS.get(acl.permission_type)
                if operation is None or permission is None:
                    log.warning(
                        "ignoring an ACL of %s:%s with an operation kts does not know", kind, resource.resource_name
                    )
                    continue
                found.setdefault(pattern, set()).add(AccessControlEntry(acl.principal, acl.host, operation, permission))
        return {pattern: frozenset(entries) for pattern, entries in found.items()}

    def create(self, pattern: ResourcePattern, entries: Entries) -> None:
        creations = [CreateAclsRequest.AclCreation(**_entry_codes(pattern, entry)) for entry in sorted(entries)]
        response = self._wire.send(CreateAclsRequest(creations=creations, min_version=ACL_API_VERSION))
        for result in response.results:
            check(result.error_code, f"Create the ACLs of {pattern.resource_type}:{pattern.name}")

    def delete(self, pattern: ResourcePattern, entries: Entries) -> None:
        filters = []
        for entry in sorted(entries):
            codes = _entry_codes(pattern, entry)
            filters.append(
                DeleteAclsRequest.DeleteAclsFilter(
                    resource_type_filter=codes["resource_type"],
                    resource_name_filter=pattern.name,
                    pattern_type_filter=codes["resource_pattern_type"],
                    principal_filter=entry.principal,
                    host_filter=entry.host,
                    operation=codes["operation"],
                    permission_type=codes["permission_type"],
                )
            )
        response = self._wire.send(DeleteAclsRequest(filters=filters, min_version=ACL_API_VERSION))
        for result in response.filter_results:
            check(result.error_code, f"Delete the ACLs of {pattern.resource_type}:{pattern.name}")


class KafkaAclCache:
    """The replica's ACLs (``AclView``), read whole from the brokers."""

    def __init__(self, acls: KafkaAcls, *, interval_ms: int) -> None:
        self._acls = acls
        self._outage = RefreshOutage("ACL cache", log)
        self._snapshot = AclSnapshot()
        self._refreshing = threading.Lock()
        self._poller = self._outage.poller("acl-cache", self.reload, interval_ms=interval_ms)
        self.loaded = False

    def snapshot(self) -> AclSnapshot:
        return self._snapshot

    def start(self) -> None:
        self.reload()
        self._poller.start()

    def stop(self) -> None:
        self._poller.stop()

    def refresh(self, pattern: ResourcePattern) -> None:
        self.reload()

    def reload(self) -> None:
        with self._refreshing:
            self._snapshot = AclSnapshot(self._acls.describe())
        self.loaded = True


class KafkaAclStore:
    """``AclStore`` through the protocol: the resource's entries as the brokers describe them, edited, and the
    difference created and deleted (two requests, not one transaction: a failure between them leaves the
    additions made; the audit records the change as failed and the cache shows what is there)."""

    def __init__(self, acls: KafkaAcls, cache: KafkaAclCache, intents: IntentMarks) -> None:
        self._acls = acls
        self._cache = cache
        self._intents = intents

    def change(
        self, pattern: ResourcePattern, edit: Callable[[Entries], Entries], intent: int | None = None
    ) -> tuple[Entries, Entries]:
        self._cache.reload()
        before = self._cache.snapshot().entries(pattern)
        after = frozenset(edit(before))
        if after != before:
            if after - before:
                self._acls.create(pattern, after - before)
            if before - after:
                self._acls.delete(pattern, before - after)
            self._cache.reload()
        if intent is not None:
            self._intents.mark(intent)
        return before, after
