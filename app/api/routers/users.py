"""``/v1/users/{name}/credentials``: SCRAM credentials in Kafka's format (set, delete, describe);
``/v1/users/{name}/lockout``: lifting the per-account lockout."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import CurrentCaller, Users
from app.api.responses import error_responses
from app.api.schemas.users import (
    CredentialResponse,
    MechanismIterations,
    SetCredentialRequest,
    UnlockResponse,
    UserCredentials,
    UserName,
)
from app.domain.credentials import Mechanism

router = APIRouter(prefix="/v1/users", tags=["users"], route_class=AuthenticatedRoute)
UserNamePath = Annotated[UserName, Path(description="The SCRAM user name: no control characters, not '.' or '..'.")]


@router.get("/{name}/credentials", response_model=UserCredentials, responses=error_responses(401, 403, 422, 503))
def describe_credentials(name: UserNamePath, caller: CurrentCaller, users: Users) -> UserCredentials:
    found = users.describe(caller, name)
    return UserCredentials(
        user=name,
        credentials=[MechanismIterations(mechanism=mechanism, iterations=count) for mechanism, count in found.items()],
    )


@router.put(
    "/{name}/credentials",
    response_model=CredentialResponse,
    responses=error_responses(401, 403, 409, 413, 422, 503),
)
def set_credential(
    name: UserNamePath, body: SetCredentialRequest, caller: CurrentCaller, users: Users
) -> CredentialResponse:
    users.set_password(caller, name, body.mechanism, body.password, body.iterations)
    return CredentialResponse(user=name, mechanism=body.mechanism, iterations=body.iterations)


@router.delete(
    "/{name}/credentials",
    response_model=CredentialResponse,
    responses=error_responses(401, 403, 404, 409, 415, 422, 503),
)
def delete_credential(
    name: UserNamePath, mechanism: Annotated[Mechanism, Query()], caller: CurrentCaller, users: Users
) -> CredentialResponse:
    users.delete(caller, name, mechanism)
    return CredentialResponse(user=name, mechanism=mechanism, deleted=True)


@router.delete(
    "/{name}/lockout",
    response_model=UnlockResponse,
    responses=error_responses(401, 403, 415, 422, 503),
)
def unlock(name: UserNamePath, caller: CurrentCaller, users: Users) -> UnlockResponse:
    """Unlock an account locked after too many failed logins, on every replica. Super users only."""
    unlocked = users.unlock(caller, name)
    return UnlockResponse(
        user=name, wasLocked=unlocked.was_locked, notShared=unlocked.not_shared, everyReplica=unlocked.every_replica
    )
