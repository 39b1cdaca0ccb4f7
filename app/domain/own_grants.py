"""The grants kts's own principal needs on a cluster reached through the Kafka protocol (docs/configuration.md's
table), which of them the cluster's ACLs lack, and the ``kafka-acls.sh`` commands that grant them. Pure: the ACLs
are read by the storage adapter.

A grant counts when an ``Allow`` entry of kts's principal (or of ``User:*``) on the resource type gives the
operation or one that implies it (``All``; for ``Describe`` also ``Alter``, Kafka's implication), on any host and
pattern (a prefixed ``CreateTokens`` for the users kts serves is enough). ``Deny`` entries are not weighed: the
preflight names what is missing, the cluster still decides.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.acl import AccessControlEntry, ResourcePattern


@dataclass(frozen=True)
class Grant:
    operation: str
    resource_type: str
    implied_by: tuple[str, ...]
    # a second way to have it: (operation, resource type)
    instead: tuple[str, str] | None = None

    def __str__(self) -> str:
        return f"{self.operation} on {self.resource_type}"


NEEDED: tuple[Grant, ...] = (
    Grant("CreateTokens", "User", ("All",)),
    Grant("DescribeTokens", "User", ("All",), instead=("Describe", "DelegationToken")),
    Grant("Alter", "Cluster", ("All",)),
    Grant("Describe", "Cluster", ("All", "Alter")),
)
CLUSTER_DESCRIBE = NEEDED[3]


def _allows(
    acls: Mapping[ResourcePattern, frozenset[AccessControlEntry]],
    principal: str,
    operations: tuple[str, ...],
    resource_type: str,
) -> bool:
    return any(
        entry.permission == "Allow" and entry.principal in (principal, "User:*") and entry.operation in operations
        for pattern, entries in acls.items()
        if pattern.resource_type == resource_type
        for entry in entries
    )


def missing_grants(acls: Mapping[ResourcePattern, frozenset[AccessControlEntry]], principal: str) -> list[Grant]:
    """The needed grants ``acls`` do not give ``principal``. Empty when kts could read the ACLs without a grant of
    ``Describe`` on the cluster: it is then a super user (or the cluster allows what no ACL names), and every other
    grant is moot too."""
    if not _allows(acls, principal, (CLUSTER_DESCRIBE.operation, *CLUSTER_DESCRIBE.implied_by), "Cluster"):
        return []
    missing = []
    for grant in NEEDED:
        if _allows(acls, principal, (grant.operation, *grant.implied_by), grant.resource_type):
            continue
        if grant.instead is not None and _allows(acls, principal, (grant.instead[0], "All"), grant.instead[1]):
            continue
        missing.append(grant)
    return missing


def grant_commands(missing: list[Grant], principal: str, bootstrap_servers: str) -> list[str]:
    """The ``kafka-acls.sh`` commands (one for the user grants, one for the cluster's) that add ``missing``."""
    base = (
        f"kafka-acls.sh --bootstrap-server {shlex.quote(bootstrap_servers)} --command-config admin.properties "
        f"--add --allow-principal {shlex.quote(principal)}"
    )
    commands = []
    for resource_type, target in (("User", "--user-principal '*'"), ("Cluster", "--cluster")):
        operations = " ".join(
            f"--operation {grant.operation}" for grant in missing if grant.resource_type == resource_type
        )
        if operations:
            commands.append(f"{base} {operations} {target}")
    return commands


def missing_grants_message(
    missing: list[Grant], principal: str, bootstrap_servers: str, *, unread: bool = False
) -> str:
    """One line: what kts's principal lacks and the commands that grant it. ``unread``: the ACLs could not be read
    (no ``Describe`` on the cluster), so every grant is named, as none could be checked."""
    lacks = ", ".join(str(grant) for grant in missing)
    why = " (without Describe on the cluster kts cannot read its ACLs, so none could be checked)" if unread else ""
    commands = " && ".join(grant_commands(missing, principal, bootstrap_servers))
    return (
        f"kts's principal {principal} lacks grants on the cluster at {bootstrap_servers}: {lacks}{why}; grant them "
        f"(or make it a super user): {commands}"
    )
