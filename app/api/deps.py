"""Dependency aliases for handlers: the runtime's services and the authenticated caller.

Dependencies that only look something up are ``async def``: FastAPI runs plain ``def`` dependencies in
its thread pool, a hop that cost more than the lookups themselves. ``get_caller`` may read ZooKeeper and
write audit events, so it stays in the pool."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.openapi.models import HTTPBase as HTTPBaseModel
from fastapi.security.base import SecurityBase

from app.api.runtime import Runtime
from app.domain.authorization import Caller
from app.service.acls import AclService
from app.service.audit_trail import AuditTrail
from app.service.tokens import TokenService
from app.service.users import UserCredentialService


class _DocumentedScheme(SecurityBase):
    """Declares an HTTP auth scheme in OpenAPI (so Swagger UI offers it) without reading the request:
    FastAPI's own HTTPBasic answers malformed headers itself, bypassing our error envelope and challenge.
    The header is parsed once, by Authenticator."""

    def __init__(self, scheme: str, description: str) -> None:
        self.model = HTTPBaseModel(scheme=scheme, description=description)
        self.scheme_name = f"http{scheme.capitalize()}"

    async def __call__(self) -> None:  # async: FastAPI runs sync dependencies in its thread pool
        return None


_basic_scheme = _DocumentedScheme("basic", "A SCRAM user's name and password.")
_bearer_scheme = _DocumentedScheme("bearer", "`tokenId:hmac` of a delegation token (the HMAC in base64).")


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def get_caller(
    request: Request,
    runtime: RuntimeDep,
    _basic: Annotated[None, Depends(_basic_scheme)],
    _bearer: Annotated[None, Depends(_bearer_scheme)],
) -> Caller:
    host = request.client.host if request.client else "*"
    tls = request.scope.get("extensions", {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or []
    return runtime.authenticator.authenticate(request.headers.get("authorization"), host, chain[0] if chain else None)


async def get_token_service(runtime: RuntimeDep) -> TokenService:
    return runtime.tokens


async def get_user_service(runtime: RuntimeDep) -> UserCredentialService:
    return runtime.users


async def get_acl_service(runtime: RuntimeDep) -> AclService:
    return runtime.acls


async def get_audit_trail(runtime: RuntimeDep) -> AuditTrail:
    return runtime.audit_trail


CurrentCaller = Annotated[Caller, Depends(get_caller)]
Tokens = Annotated[TokenService, Depends(get_token_service)]
Users = Annotated[UserCredentialService, Depends(get_user_service)]
Acls = Annotated[AclService, Depends(get_acl_service)]
Audit = Annotated[AuditTrail, Depends(get_audit_trail)]
