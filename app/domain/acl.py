"""ACLs as Kafka's ``AclAuthorizer`` (ZooKeeper mode) stores and evaluates them.

Evaluation, in Kafka's order: super users pass; the ACLs that match the resource are those on the
literal name, on the literal ``*``, and on every prefix of the name; with none at all the answer is
``allow.everyone.if.no.acl.found``; otherwise a matching Deny refuses, and a matching Allow permits.
An entry matches when its principal is the caller's or ``User:*``, its host is the caller's or ``*``,
and its operation is the one asked for or ``All``. As in Kafka, ``Describe`` is implied by an Allow
of ``Read``, ``Write``, ``Delete`` or ``Alter``, and ``DescribeConfigs`` by ``AlterConfigs``.

Hosts are compared as addresses, the way Java's ``InetAddress`` sees them: ``::1``, ``0:0:0:0:0:0:0:1`` and
``0:0::1`` are one address, case does not matter, and an IPv4-mapped IPv6 address is its IPv4 address.
A host that is not an address compares as a string. Each entry parses its host once, when it is built.

Entries keep their fields as the strings stored in ZooKeeper, so ACLs written by kafka-acls.sh for
operations or resource types kts never grants survive a rewrite of the same znode untouched.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum

from app.domain.authorization import (
    CLUSTER_RESOURCE_NAME,
    Caller,
    Operation,
    ResourceType,
)
from app.domain.errors import InvalidInput, InvalidPrincipal
from app.domain.principal import MAX_PRINCIPAL_LENGTH, KafkaPrincipal

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
MAX_RESOURCE_NAME_LENGTH = MAX_PRINCIPAL_LENGTH + 16  # User resources are named after principals
# What ZooKeeper refuses in a path element (PathUtils.validatePath): resource names become znode names.
_BAD_NAME = re.compile("[/\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\uffff\U00010000-\U0010ffff]")
_RESERVED_NAMES = frozenset({".", ".."})


class PatternType(StrEnum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Permission(StrEnum):
    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: str
    name: str
    pattern_type: PatternType = PatternType.LITERAL


HostKey = ipaddress.IPv4Address | ipaddress.IPv6Address | str


def host_key(host: str) -> HostKey:
    """What a host compares as: its address as Java's ``InetAddress`` holds it, or the text itself."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # InetAddress.getByName("::ffff:198.51.100.1") is an Inet4Address
    return address


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: str
    permission: str
    # Parsed once here rather than for every request that this entry is checked against.
    host_key: HostKey = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "host_key", host_key(self.host))


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


# What the kts API lets callers grant: the token-related resources and the cluster (for managing kts).
GRANTABLE_OPERATIONS: Mapping[ResourceType, frozenset[Operation]] = {
    ResourceType.USER: frozenset({Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS, Operation.ALL}),
    ResourceType.DELEGATION_TOKEN: frozenset({Operation.DESCRIBE, Operation.ALL}),
    ResourceType.CLUSTER: frozenset({Operation.ALTER, Operation.DESCRIBE, Operation.ALL}),
}

_IMPLIED_BY: Mapping[str, frozenset[str]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


def validate_binding(binding: AclBinding) -> None:
    """Refuse, with a sentence the caller can act on, an ACL that kts would not grant."""
    pattern, entry = binding.pattern, binding.entry
    try:
        resource_type = ResourceType(pattern.resource_type)
    except ValueError:
        raise InvalidInput(f"Unknown resource type {pattern.resource_type!r}.") from None
    if resource_type not in GRANTABLE_OPERATIONS:
        allowed = ", ".join(sorted(GRANTABLE_OPERATIONS))
        raise InvalidInput(f"kts manages ACLs on {allowed} resources only, not {resource_type}.")
    try:
        operation = Operation(entry.operation)
    except ValueError:
        raise InvalidInput(f"Unknown operation {entry.operation!r}.") from None
    if operation not in GRANTABLE_OPERATIONS[resource_type]:
        allowed = ", ".join(sorted(GRANTABLE_OPERATIONS[resource_type]))
        raise InvalidInput(f"Operation {operation} makes no sense on {resource_type} resources (use {allowed}).")
    if entry.permission not in tuple(Permission):
        raise InvalidInput("permissionType must be Allow or Deny.")
    if (
        not pattern.name
        or len(pattern.name) > MAX_RESOURCE_NAME_LENGTH
        or _BAD_NAME.search(pattern.name)
        or pattern.name in _RESERVED_NAMES
    ):
        raise InvalidInput(
            "A resource name must be non-empty, not too long, and free of '/', control characters "
            "and others ZooKeeper cannot store."
        )
    if resource_type is ResourceType.CLUSTER and (
        pattern.name != CLUSTER_RESOURCE_NAME or pattern.pattern_type is not PatternType.LITERAL
    ):
        raise InvalidInput(f"The Cluster resource is the LITERAL name {CLUSTER_RESOURCE_NAME}.")
    if resource_type is ResourceType.USER and pattern.name != WILDCARD_RESOURCE:
        if pattern.pattern_type is PatternType.LITERAL:
            _principal(pattern.name, what="A User resource name")
        elif ":" not in pattern.name:
            raise InvalidInput("A PREFIXED User resource name starts with a principal type, as in User:team-.")
    _principal(entry.principal, what="The ACL principal")
    if entry.host != WILDCARD_HOST:
        try:
            ipaddress.ip_address(entry.host)
        except ValueError:
            raise InvalidInput("host must be * or an IP address.") from None


def super_user_grant_warnings(
    binding: AclBinding, super_users: Iterable[KafkaPrincipal], *, tokens_for_super_users: bool
) -> list[str]:
    """One sentence per super user whose tokens ``binding`` lets someone else create: an Allow of
    CreateTokens or All on a User pattern covering ``User:<super user>`` (the literal ``*``, that literal
    name, or a prefix of it). Such a token authenticates as the super user, on brokers and on kts."""
    pattern, entry = binding.pattern, binding.entry
    if (
        pattern.resource_type != ResourceType.USER
        or entry.permission != Permission.ALLOW
        or entry.operation not in (Operation.CREATE_TOKENS, Operation.ALL)
    ):
        return []
    names = {str(principal) for principal in super_users}
    if entry.principal in names:  # a super user may create any token already
        return []
    if tokens_for_super_users:
        consequence = "kts issues them (token.create.for.super.users=true), and Kafka brokers do too."
    else:
        consequence = "kts refuses them (token.create.for.super.users=false), but Kafka brokers honour this ACL."
    return [
        f"This ACL lets {entry.principal} create delegation tokens for the super user {name}, which "
        f"authenticate as {name}: {consequence}"
        for name in sorted(names)
        if _pattern_covers(pattern, name)
    ]


def _pattern_covers(pattern: ResourcePattern, name: str) -> bool:
    if pattern.pattern_type == PatternType.PREFIXED:
        return name.startswith(pattern.name)
    return pattern.name in (name, WILDCARD_RESOURCE)


def _principal(text: str, *, what: str) -> None:
    try:
        KafkaPrincipal.parse(text)
    except InvalidPrincipal as exc:
        raise InvalidInput(f"{what} is not a principal: {exc.message}") from None


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Selects bindings by exact field values; a field left None matches anything."""

    resource_type: str | None = None
    name: str | None = None
    pattern_type: PatternType | None = None
    principal: str | None = None
    host: str | None = None
    operation: str | None = None
    permission: str | None = None

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, field.name) is None for field in fields(self))

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        return (
            (self.resource_type is None or pattern.resource_type == self.resource_type)
            and (self.name is None or pattern.name == self.name)
            and (self.pattern_type is None or pattern.pattern_type == self.pattern_type)
        )

    def matches(self, binding: AclBinding) -> bool:
        entry = binding.entry
        return (
            self.matches_pattern(binding.pattern)
            and (self.principal is None or entry.principal == self.principal)
            and (self.host is None or entry.host == self.host)
            and (self.operation is None or entry.operation == self.operation)
            and (self.permission is None or entry.permission == self.permission)
        )


class AclSnapshot:
    """An immutable view of every ACL; replicas swap whole snapshots, so readers never lock."""

    __slots__ = ("_allowed", "_by_pattern", "_prefixed")

    def __init__(self, by_pattern: Mapping[ResourcePattern, frozenset[AccessControlEntry]] | None = None) -> None:
        self._by_pattern = {pattern: entries for pattern, entries in (by_pattern or {}).items() if entries}
        self._prefixed: dict[str, list[tuple[str, frozenset[AccessControlEntry]]]] = {}
        # (principal, operation) of every Allow entry, by resource type, whatever the resource name.
        self._allowed: dict[str, set[tuple[str, str]]] = {}
        for pattern, entries in self._by_pattern.items():
            if pattern.pattern_type is PatternType.PREFIXED:
                self._prefixed.setdefault(pattern.resource_type, []).append((pattern.name, entries))
            self._allowed.setdefault(pattern.resource_type, set()).update(
                (entry.principal, entry.operation) for entry in entries if entry.permission == Permission.ALLOW
            )

    def replace(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> AclSnapshot:
        updated = dict(self._by_pattern)
        updated[pattern] = frozenset(entries)
        return AclSnapshot(updated)

    def entries(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._by_pattern.get(pattern, frozenset())

    def bindings(self) -> list[AclBinding]:
        return sorted(AclBinding(pattern, entry) for pattern, entries in self._by_pattern.items() for entry in entries)

    def matching(self, resource_type: str, name: str) -> list[AccessControlEntry]:
        """Entries on the literal name, the literal wildcard, and every prefix of the name."""
        found = list(self.entries(ResourcePattern(resource_type, name)))
        found += self.entries(ResourcePattern(resource_type, WILDCARD_RESOURCE))
        for prefix, entries in self._prefixed.get(resource_type, ()):
            if name.startswith(prefix):
                found += entries
        return found

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._by_pattern.values())

    def allows_somewhere(self, resource_type: str, principal: KafkaPrincipal, operation: Operation) -> bool:
        """Some Allow entry on a resource of this type could grant ``operation`` to ``principal`` (hosts
        aside): without one, no resource of the type is granted to it, whatever its name."""
        allowed = self._allowed.get(resource_type, set())
        operations = {*_IMPLIED_BY.get(operation, frozenset({operation})), Operation.ALL}
        return any((who, what) in allowed for who in (str(principal), WILDCARD_PRINCIPAL) for what in operations)


def acls_allow(
    entries: Iterable[AccessControlEntry],
    principal: KafkaPrincipal,
    host: str,
    operation: Operation,
    *,
    allow_everyone_if_no_acl_found: bool,
) -> bool:
    """Kafka's decision for a caller who is not a super user, given the entries matching the resource."""
    entries = list(entries)
    if not entries:
        return allow_everyone_if_no_acl_found
    principal_text = str(principal)
    caller_host = host_key(host)

    def applies(entry: AccessControlEntry, permission: Permission, operations: frozenset[str]) -> bool:
        return (
            entry.permission == permission
            and entry.principal in (principal_text, WILDCARD_PRINCIPAL)
            and (entry.host == WILDCARD_HOST or entry.host_key == caller_host)
            and (entry.operation in operations or entry.operation == Operation.ALL)
        )

    if any(applies(entry, Permission.DENY, frozenset({operation})) for entry in entries):
        return False
    allowing = _IMPLIED_BY.get(operation, frozenset({operation}))
    return any(applies(entry, Permission.ALLOW, allowing) for entry in entries)


class AclAuthorizer:
    """The Authorizer of the service: super users, then the ACLs of the current snapshot."""

    def __init__(
        self,
        super_users: Iterable[KafkaPrincipal],
        snapshot: Callable[[], AclSnapshot],
        *,
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self._super_users = frozenset(super_users)
        self._snapshot = snapshot
        self._allow_if_none = allow_everyone_if_no_acl_found

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self._super_users

    def authorize(self, caller: Caller, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        if self.is_super_user(caller.principal):
            return True
        return acls_allow(
            self._snapshot().matching(resource_type, name),
            caller.principal,
            caller.host,
            operation,
            allow_everyone_if_no_acl_found=self._allow_if_none,
        )

    def may_authorize_some(self, caller: Caller, operation: Operation, resource_type: ResourceType) -> bool:
        # A resource with no ACL at all is granted to everyone under allow.everyone.if.no.acl.found.
        return (
            self._allow_if_none
            or self.is_super_user(caller.principal)
            or self._snapshot().allows_somewhere(resource_type, caller.principal, operation)
        )
