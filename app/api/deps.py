"""Dependency aliases for handlers: the services, the readiness view and the authenticated caller.

``Services`` is all the HTTP layer may see of the running replica (the composition root's ``Runtime``
provides it); handlers take one service or view each, never storage objects.

Dependencies that only look something up are ``async def``: FastAPI runs plain ``def`` dependencies in
its thread pool, a hop that cost more than the lookups themselves. Authenticating may read ZooKeeper and write
audit events, so it runs in the pool too, but in the endpoint's own thread: ``get_caller`` only answers a
``DeferredCaller``, which the endpoint's route authenticates first thing in that thread (app/api/authenticated_route.py)
rather than in a hop of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Protocol

from fastapi import Depends, Request

from app.auth.authenticator import Authenticator
from app.domain.authorization import Caller
from app.domain.cluster_facts import ClusterFacts
from app.domain.cluster_migration import ClusterState
from app.domain.errors import StoreUnavailable
from app.service.acls import AclService
from app.service.audit_trail import AuditTrail
from app.service.metrics_access import MetricsAccess
from app.service.readiness import ClusterStatus, Readiness, ReadinessChecks
from app.service.revocation import TokenRevocation
from app.service.tokens import TokenService
from app.service.users import UserCredentialService


class Services(Protocol):
    @property
    def tokens(self) -> TokenService: ...

    @property
    def revocation(self) -> TokenRevocation: ...

    @property
    def users(self) -> UserCredentialService: ...

    @property
    def acls(self) -> AclService: ...

    @property
    def audit_trail(self) -> AuditTrail: ...

    @property
    def metrics_access(self) -> MetricsAccess: ...

    @property
    def authenticator(self) -> Authenticator: ...

    @property
    def readiness(self) -> Readiness: ...

    @property
    def cluster_status(self) -> ClusterStatus: ...


SERVICES_STATE = "runtime"  # the app.state attribute the lifespan sets


class Starting:
    """The readiness of a replica whose runtime is not built yet (the management listener answers meanwhile)."""

    backend: str | None = None  # not known before the runtime is built
    cluster: Callable[[], ClusterState] | None = None  # not read yet
    facts: Callable[[], ClusterFacts] | None = None  # not read yet
    unrenewable: Callable[[], int] | None = None  # no tokens loaded yet

    def checks(self) -> dict[str, str]:
        return {"runtime": "starting"}


def services_of(request: Request) -> Services:
    services: Services | None = getattr(request.app.state, SERVICES_STATE, None)
    if services is None:  # only the management listener serves before the main app's lifespan has run
        raise StoreUnavailable("kts is starting; retry later.")
    return services


async def get_services(request: Request) -> Services:
    return services_of(request)


ServicesDep = Annotated[Services, Depends(get_services)]


DEFERRED_CALLER = "kts.deferred_caller"  # the request scope's key of its DeferredCaller


class DeferredCaller:
    """A request's caller, authenticated when first asked for (``resolve``), at most once: the route does it in
    the endpoint's thread, or, when the request fails before the endpoint runs, before that failure is answered,
    so an unauthenticated request is refused as such whatever else is wrong with it."""

    __slots__ = ("_request", "_services", "attempted", "caller")

    def __init__(self, request: Request, services: Services) -> None:
        self._request = request
        self._services = services
        self.attempted = False
        self.caller: Caller | None = None

    def resolve(self) -> Caller:
        if self.caller is None:
            if self.attempted:  # the first attempt raised: never authenticate (nor audit) a request twice
                raise RuntimeError("the request's authentication already failed")
            self.attempted = True
            self.caller = authenticate_request(self._request, self._services)
        return self.caller


# The dependencies below read the services from the request rather than depend on ``get_services``: FastAPI solves
# every dependency of a dependency again on each request (a cached one too) before it looks in its cache.


async def get_caller(request: Request) -> DeferredCaller:
    """The caller, to authenticate in the endpoint's thread (AuthenticatedRoute, whose endpoints get a Caller). The
    schemes it accepts are documented by the route (app/api/security_schemes.py), not by dependencies of this one."""
    deferred = DeferredCaller(request, services_of(request))
    request.scope[DEFERRED_CALLER] = deferred
    return deferred


def authenticate_request(request: Request, services: Services) -> Caller:
    """The caller, for endpoints that authenticate only sometimes and so cannot declare ``CurrentCaller``."""
    host = request.client.host if request.client else "*"
    tls = request.scope.get("extensions", {}).get("tls") or {}
    chain = tls.get("client_cert_chain") or []
    return services.authenticator.authenticate(request.headers.get("authorization"), host, chain[0] if chain else None)


async def get_token_service(request: Request) -> TokenService:
    return services_of(request).tokens


async def get_revocation(request: Request) -> TokenRevocation:
    return services_of(request).revocation


async def get_user_service(request: Request) -> UserCredentialService:
    return services_of(request).users


async def get_acl_service(request: Request) -> AclService:
    return services_of(request).acls


async def get_audit_trail(request: Request) -> AuditTrail:
    return services_of(request).audit_trail


async def get_cluster_status(request: Request) -> ClusterStatus:
    return services_of(request).cluster_status


async def get_readiness(request: Request) -> ReadinessChecks:
    services: Services | None = getattr(request.app.state, SERVICES_STATE, None)
    return Starting() if services is None else services.readiness


CurrentCaller = Annotated[Caller, Depends(get_caller)]
Tokens = Annotated[TokenService, Depends(get_token_service)]
Revocations = Annotated[TokenRevocation, Depends(get_revocation)]
Users = Annotated[UserCredentialService, Depends(get_user_service)]
Acls = Annotated[AclService, Depends(get_acl_service)]
Audit = Annotated[AuditTrail, Depends(get_audit_trail)]
ReadinessView = Annotated[ReadinessChecks, Depends(get_readiness)]
ClusterStatusView = Annotated[ClusterStatus, Depends(get_cluster_status)]
