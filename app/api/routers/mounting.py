"""Routers' routes put into an app as they were built, not built again.

FastAPI builds each route of an ``APIRouter`` when its module declares it (its dependencies, its request and
response models: a pydantic TypeAdapter each). ``include_router`` then builds every one of them a second time, for
the including app, on the app's first request: some 35 ms of CPU that the first ``/readyz`` of a starting replica
paid. kts's routers carry their prefix and tags themselves and are included with nothing added (no prefix,
dependencies, responses or overrides), so the routes they built are the app's as they are: the same paths,
handlers and OpenAPI document (``openapi/openapi.json``, tests/api/test_openapi.py)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI


def mount(app: FastAPI, *routers: APIRouter) -> None:
    """The routers' routes added to ``app`` in order, as ``app.include_router(router)`` would match them."""
    for router in routers:
        app.router.routes.extend(router.routes)
