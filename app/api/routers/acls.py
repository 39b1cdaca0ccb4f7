"""``/v1/acls``: ACLs in Kafka's znodes, managed with Alter (listed with Describe) on the cluster."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, status

from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import Acls, CurrentCaller
from app.api.responses import error_responses
from app.api.schemas.acls import Acl, AclList, AddedAcl, DeletedAcls, StoredAcl
from app.domain.acl import MAX_RESOURCE_NAME_LENGTH, AclFilter, PatternType
from app.domain.principal import MAX_PRINCIPAL_LENGTH

router = APIRouter(prefix="/v1/acls", tags=["acls"], route_class=AuthenticatedRoute)

Short = Annotated[str | None, Query(min_length=1, max_length=64)]


def acl_filter(
    resourceType: Short = None,
    resourceName: Annotated[str | None, Query(min_length=1, max_length=MAX_RESOURCE_NAME_LENGTH)] = None,
    patternType: PatternType | None = None,
    principal: Annotated[str | None, Query(min_length=1, max_length=MAX_PRINCIPAL_LENGTH)] = None,
    host: Short = None,
    operation: Short = None,
    permissionType: Short = None,
) -> AclFilter:
    return AclFilter(resourceType, resourceName, patternType, principal, host, operation, permissionType)


Filter = Annotated[AclFilter, Depends(acl_filter)]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=AddedAcl,
    response_model_exclude_none=True,
    responses=error_responses(401, 403, 409, 413, 422, 503),
)
def create_acl(body: Acl, caller: CurrentCaller, acls: Acls) -> AddedAcl:
    added = acls.create(caller, body.binding())
    return AddedAcl.of_binding(added.binding, added.warnings)


@router.get("", response_model=AclList, responses=error_responses(401, 403, 422, 503))
def list_acls(caller: CurrentCaller, acls: Acls, selector: Filter) -> AclList:
    return AclList(acls=[StoredAcl.of(binding) for binding in acls.describe(caller, selector)])


@router.delete("", response_model=DeletedAcls, responses=error_responses(401, 403, 409, 415, 422, 503))
def delete_acls(caller: CurrentCaller, acls: Acls, selector: Filter) -> DeletedAcls:
    return DeletedAcls(deleted=[StoredAcl.of(binding) for binding in acls.delete(caller, selector)])
