"""Who may do what: the caller, Kafka's resource types and operations, and the Authorizer port.

The ACL-backed authorizer lands with the ACL issue; until then ``SuperUsersOnly`` grants every
operation to super users and none to anyone else, which is what "only super users may create a token
for another owner" requires.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from app.domain.principal import KafkaPrincipal


class ResourceType(StrEnum):
    CLUSTER = "Cluster"
    DELEGATION_TOKEN = "DelegationToken"
    USER = "User"


class Operation(StrEnum):
    ALL = "All"
    ALTER = "Alter"
    DESCRIBE = "Describe"
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
    def is_super_user(self, principal: KafkaPrincipal) -> bool: ...

    def authorize(self, caller: Caller, operation: Operation, resource_type: ResourceType, name: str) -> bool: ...


class SuperUsersOnly:
    def __init__(self, super_users: Iterable[KafkaPrincipal]) -> None:
        self._super_users = frozenset(super_users)

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self._super_users

    def authorize(self, caller: Caller, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        return self.is_super_user(caller.principal)
