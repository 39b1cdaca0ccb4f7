"""ACL bodies and filters (docs/api.md#acls). Values are checked by ``app.domain.acl.validate_binding``
so that every refusal carries one sentence saying what is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from app.api.schemas.common import RequestModel
from app.domain.acl import (
    MAX_RESOURCE_NAME_LENGTH,
    AccessControlEntry,
    AclBinding,
    PatternType,
    ResourcePattern,
)
from app.domain.principal import MAX_PRINCIPAL_LENGTH

ShortText = Annotated[str, StringConstraints(min_length=1, max_length=64)]
ResourceName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_RESOURCE_NAME_LENGTH)]
PrincipalField = Annotated[str, StringConstraints(min_length=1, max_length=MAX_PRINCIPAL_LENGTH)]


class Acl(RequestModel):
    resourceType: ShortText = Field(examples=["User"], description="User, DelegationToken or Cluster")
    resourceName: ResourceName = Field(examples=["User:joe"])
    patternType: Annotated[PatternType, Field(strict=False)] = PatternType.LITERAL
    principal: PrincipalField = Field(examples=["User:nimbus"])
    host: Annotated[str, StringConstraints(min_length=1, max_length=64)] = "*"
    operation: ShortText = Field(
        examples=["CreateTokens"], description="CreateTokens, DescribeTokens, Describe, Alter or All"
    )
    permissionType: ShortText = Field(examples=["Allow"], description="Allow or Deny")

    def binding(self) -> AclBinding:
        return AclBinding(
            ResourcePattern(self.resourceType, self.resourceName, self.patternType),
            AccessControlEntry(self.principal, self.host, self.operation, self.permissionType),
        )


class StoredAcl(BaseModel):
    """An ACL as ZooKeeper holds it. kafka-acls.sh may have written any resource type, name, principal or
    host there, so a response is not held to the limits of a request: one such ACL must not break a listing."""

    resourceType: str
    resourceName: str
    patternType: PatternType
    principal: str
    host: str
    operation: str
    permissionType: str

    @classmethod
    def of(cls, binding: AclBinding) -> StoredAcl:
        return cls(
            resourceType=binding.pattern.resource_type,
            resourceName=binding.pattern.name,
            patternType=binding.pattern.pattern_type,
            principal=binding.entry.principal,
            host=binding.entry.host,
            operation=binding.entry.operation,
            permissionType=binding.entry.permission,
        )


class AddedAcl(StoredAcl):
    warnings: list[str] | None = Field(
        None,
        description="Present when the ACL allows something its author may not mean, such as creating "
        "tokens that authenticate as a super user: one sentence each.",
    )

    @classmethod
    def of_binding(cls, binding: AclBinding, warnings: Sequence[str]) -> AddedAcl:
        return cls(**StoredAcl.of(binding).model_dump(), warnings=list(warnings) or None)


class AclList(BaseModel):
    acls: list[StoredAcl]


class DeletedAcls(BaseModel):
    deleted: list[StoredAcl]
