"""The routers' routes are the app's as they were built: none is built again for the app (FastAPI's include_router
builds each route a second time on the app's first request)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.api.routers import acls, ops, tokens
from app.api.routers.mounting import mount


def test_the_app_serves_the_routers_own_route_objects_in_order() -> None:
    app = FastAPI()

    mount(app, tokens.router, acls.router, ops.router)

    built = [*tokens.router.routes, *acls.router.routes, *ops.router.routes]
    mounted = [route for route in app.router.routes if isinstance(route, APIRoute)]
    assert len(mounted) == len(built)
    assert all(served is own for served, own in zip(mounted, built, strict=True))


def test_a_mounted_route_answers_with_its_prefix_and_appears_in_the_openapi_document_as_included() -> None:
    router = APIRouter(prefix="/things", tags=["things"])

    @router.get("/{name}")
    def thing(name: str) -> dict[str, str]:
        return {"name": name}

    mounted, included = FastAPI(), FastAPI()
    mount(mounted, router)
    included.include_router(router)

    assert TestClient(mounted).get("/things/a").json() == {"name": "a"}
    assert mounted.openapi() == included.openapi()
