"""Dependency aliases for handlers: the runtime's services and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBasic, HTTPBasicCredentials, HTTPBearer
from fastapi.security.http import HTTPAuthorizationCredentials

from app.api.runtime import Runtime
from app.domain.authorization import Caller
from app.service.tokens import TokenService
from app.service.users import UserCredentialService

# Declared so OpenAPI (and Swagger UI) offers both schemes; the header itself is parsed by Authenticator.
_basic_scheme = HTTPBasic(auto_error=False, description="A SCRAM user's name and password.")
_bearer_scheme = HTTPBearer(auto_error=False, description="<tokenId>:<base64 hmac> of a delegation token.")


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_caller(
    request: Request,
    runtime: RuntimeDep,
    _basic: Annotated[HTTPBasicCredentials | None, Depends(_basic_scheme)],
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer_scheme)],
) -> Caller:
    host = request.client.host if request.client else "*"
    return runtime.authenticator.authenticate(request.headers.get("authorization"), host)


def get_token_service(runtime: RuntimeDep) -> TokenService:
    return runtime.tokens


def get_user_service(runtime: RuntimeDep) -> UserCredentialService:
    return runtime.users


CurrentCaller = Annotated[Caller, Depends(get_caller)]
Tokens = Annotated[TokenService, Depends(get_token_service)]
Users = Annotated[UserCredentialService, Depends(get_user_service)]
