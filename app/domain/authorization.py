"""Who may do what: the caller, Kafka's resource types and operations, the Authorizer port, and the one
check of a permission on the cluster (managing ACLs and credentials, reading the audit trail).

The ACL-backed implementation is ``app.domain.acl.AclAuthorizer``. ``SuperUsersOnly`` grants every
operation to super users and none to anyone else (for tests and for a service run without ACLs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from app.domain.errors import ClusterAuthorizationFailed
from app.domain.principal import KafkaPrincipal


class ResourceType(StrEnum):
    """Kafka's resource type names, as they appear in ACL znode paths."""

    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"
    USER = "User"


class Operation(StrEnum):
    """Kafka's ACL operation names (CamelCase, as stored in ACL znodes)."""

    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"
    CREATE_TOKENS = "CreateTokens"
    DESCRIBE_TOKENS = "DescribeTokens"


CLUSTER_RESOURCE_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller. ``token_id`` is set when the caller logged in with a delegation token."""

    principal: KafkaPrincipal
    host: str = "*"
    token_id: str | None = None

    @property
    def token_authenticated(self) -> bool:
        return self.token_id is not None


class Authorizer(Protocol):
    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        """Whether ``principal`` is one of ``super.users``: ``authorize`` grants such a caller everything it is asked
        (as Kafka's authorizer does), which callers may rely on to skip asking."""
        ...

    def authorize(self, caller: Caller, operation: Operation, resource_type: ResourceType, name: str) -> bool: ...

    def may_authorize_some(self, caller: Caller, operation: Operation, resource_type: ResourceType) -> bool:
        """False only when ``authorize`` answers no for every name of ``resource_type`` (so a listing need not
        ask about each one); True may overstate."""
        ...


def ensure_cluster_permission(
    authorizer: Authorizer, caller: Caller, operation: Operation, *, to: str, login_required: bool = False
) -> None:
    """Raise ClusterAuthorizationFailed unless ``caller`` may do ``operation`` on the cluster; ``to`` says
    what for, in the message. With ``login_required`` a caller authenticated by a delegation token is
    refused whatever the ACLs say: a leaked token must not be able to widen its own powers."""
    if (login_required and caller.token_authenticated) or not authorizer.authorize(
        caller, operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME
    ):
        raise ClusterAuthorizationFailed(
            f"{caller.principal} may not {to} (needs {operation} on Cluster:{CLUSTER_RESOURCE_NAME})."
        )


class SuperUsersOnly:
    def __init__(self, super_users: Iterable[KafkaPrincipal]) -> None:
        self._super_users = frozenset(super_users)

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self._super_users

    def authorize(self, caller: Caller, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return self.is_super_user(caller.principal)

    def may_authorize_some(self, caller: Caller, operation: Operation, resource_type: ResourceType) -> bool:
        return self.is_super_user(caller.principal)
