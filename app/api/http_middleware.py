"""The base of kts's pure ASGI middlewares: each acts on HTTP requests alone, and everything else the server
sends through (the lifespan, a websocket) passes by untouched. A middleware that refuses a request answers with
the API's error envelope (docs/api.md) itself, as the app is not reached."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One HTTP request."""
        raise NotImplementedError


async def send_error(send: Send, status: int, error: str, message: str) -> None:
    """Answer with the error envelope ``{"error": ..., "message": ...}`` and ``status``."""
    body = json.dumps({"error": error, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
