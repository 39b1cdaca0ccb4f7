"""AuthenticatedRoute: the caller is authenticated once, in the endpoint's own thread, and before anything else
is answered; every route that takes the caller is one."""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, FastAPI, Query
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.api.app import create_app
from app.api.authenticated_route import AuthenticatedRoute
from app.api.deps import SERVICES_STATE, CurrentCaller, get_caller
from app.api.errors import install_error_handlers
from app.domain.authorization import Caller
from app.domain.errors import NotAuthenticated
from app.domain.principal import KafkaPrincipal


class _Authenticator:
    """Accepts the header ``good``; remembers on which threads it was asked."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def authenticate(self, authorization: str | None, host: str, certificate: str | None) -> Caller:
        self.threads.append(threading.get_ident())
        if authorization != "good":
            raise NotAuthenticated("no")
        return Caller(KafkaPrincipal.user("alice"), host=host)


class _Named(BaseModel):
    name: str


class _Services:
    def __init__(self) -> None:
        self.authenticator = _Authenticator()


@pytest.fixture
def app() -> tuple[TestClient, _Services, list[int]]:
    router = APIRouter(route_class=AuthenticatedRoute)
    endpoint_threads: list[int] = []

    @router.get("/whoami")
    def whoami(caller: CurrentCaller, n: Annotated[int, Query(ge=1)] = 1) -> dict[str, Any]:
        endpoint_threads.append(threading.get_ident())
        return {"principal": str(caller.principal), "n": n}

    application = FastAPI()
    install_error_handlers(application)
    application.include_router(router)
    services = _Services()
    setattr(application.state, SERVICES_STATE, services)
    return TestClient(application), services, endpoint_threads


def test_the_caller_is_authenticated_once_in_the_endpoints_thread(app: tuple[TestClient, _Services, list[int]]) -> None:
    client, services, endpoint_threads = app
    response = client.get("/whoami", headers={"Authorization": "good"})
    assert response.json() == {"principal": "User:alice", "n": 1}
    assert services.authenticator.threads == endpoint_threads
    assert len(endpoint_threads) == 1


def test_the_endpoint_runs_off_the_loop_with_the_requests_context_and_returns_models() -> None:
    """The endpoint's thread is one of the request pool's, never the event loop's; it sees the context variables the
    middleware set for the request (the audit's request id); what it returns FastAPI answers as from any endpoint."""
    seen: ContextVar[str] = ContextVar("seen", default="unset")
    router = APIRouter(route_class=AuthenticatedRoute)
    loop_threads: list[int] = []
    found: list[tuple[int, str]] = []

    @router.get("/model", response_model=_Named)
    def model(caller: CurrentCaller) -> _Named:
        found.append((threading.get_ident(), seen.get()))
        return _Named(name=str(caller.principal))

    application = FastAPI()
    install_error_handlers(application)

    @application.middleware("http")
    async def mark(request: Any, call_next: Any) -> Any:
        loop_threads.append(threading.get_ident())
        token = seen.set(request.headers.get("x-mark", ""))
        try:
            return await call_next(request)
        finally:
            seen.reset(token)

    application.include_router(router)
    setattr(application.state, SERVICES_STATE, _Services())
    client = TestClient(application)
    for mark_value in ("first", "second"):
        response = client.get("/model", headers={"Authorization": "good", "x-mark": mark_value})
        assert response.json() == {"name": "User:alice"}
    assert [value for _, value in found] == ["first", "second"]
    assert not {thread for thread, _ in found} & set(loop_threads)


def test_an_invalid_request_is_authenticated_first_and_once(app: tuple[TestClient, _Services, list[int]]) -> None:
    client, services, endpoint_threads = app
    assert client.get("/whoami?n=0", headers={"Authorization": "bad"}).status_code == 401
    assert client.get("/whoami?n=0", headers={"Authorization": "good"}).status_code == 422
    assert len(services.authenticator.threads) == 2
    assert endpoint_threads == []


def test_a_refused_caller_is_authenticated_once(app: tuple[TestClient, _Services, list[int]]) -> None:
    client, services, endpoint_threads = app
    assert client.get("/whoami", headers={"Authorization": "bad"}).status_code == 401
    assert len(services.authenticator.threads) == 1
    assert endpoint_threads == []


def test_an_async_endpoint_is_refused() -> None:
    router = APIRouter(route_class=AuthenticatedRoute)
    with pytest.raises(TypeError):

        @router.get("/")
        async def on_the_loop(caller: CurrentCaller) -> None:
            return None


def _takes_the_caller(route: APIRoute) -> bool:
    pending = list(route.dependant.dependencies)
    while pending:
        dependant = pending.pop()
        if dependant.call is get_caller:
            return True
        pending.extend(dependant.dependencies)
    return False


def _api_routes(routes: list[Any]) -> list[APIRoute]:
    """Every APIRoute, those of included routers too (FastAPI keeps an included router as one route of its own)."""
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):
            found.extend(_api_routes(route.original_router.routes))
    return found


def test_every_route_that_takes_the_caller_authenticates_it() -> None:
    """An endpoint on another route class would get the DeferredCaller itself, not a Caller."""
    routes = [route for route in _api_routes(create_app().routes) if _takes_the_caller(route)]
    assert routes
    assert all(isinstance(route, AuthenticatedRoute) for route in routes), [
        route.path for route in routes if not isinstance(route, AuthenticatedRoute)
    ]
