"""The base of the pure ASGI middlewares (app/api/http_middleware.py): HTTP requests reach ``handle``, anything
else passes by to the app untouched."""

from __future__ import annotations

import asyncio

from starlette.types import Receive, Scope, Send

from app.api.http_middleware import HttpMiddleware


class _Inner:
    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope["type"])


class _Marking(HttpMiddleware):
    handled: list[str]

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.handled.append(scope["path"])
        await self.app(scope, receive, send)


async def _receive() -> dict[str, object]:
    return {"type": "http.disconnect"}


async def _send(message: object) -> None:
    pass


def _run(middleware: HttpMiddleware, scope: Scope) -> None:
    asyncio.run(middleware(scope, _receive, _send))


def test_an_http_request_goes_through_handle() -> None:
    inner = _Inner()
    middleware = _Marking(inner)
    middleware.handled = []
    _run(middleware, {"type": "http", "path": "/v1/tokens"})
    assert middleware.handled == ["/v1/tokens"] and inner.scopes == ["http"]


def test_the_lifespan_and_websockets_pass_by_untouched() -> None:
    inner = _Inner()
    middleware = _Marking(inner)
    middleware.handled = []
    _run(middleware, {"type": "lifespan"})
    _run(middleware, {"type": "websocket", "path": "/ws"})
    assert middleware.handled == [] and inner.scopes == ["lifespan", "websocket"]
