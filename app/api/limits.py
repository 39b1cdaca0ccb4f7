"""Request body size limit, enforced before any parsing (pure ASGI, so streamed bodies are counted too)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.http_middleware import HttpMiddleware, send_error

MAX_BODY_BYTES = 64 * 1024
# The request line and header fields of one request (or the trailer fields of a chunked body), however the
# bytes arrive (app/cli/server/uvicorn_h11.py answers 431 past it). h11 bounds only an incomplete header
# block; one that arrives whole in a single read it would accept at any size.
MAX_HEADER_BYTES = 16 * 1024


class _TooLarge(HTTPException):
    """An HTTPException because FastAPI turns any other error raised while it reads a body into a 400; this
    one it re-raises, and the app's handler answers it as a 413 with the error envelope."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, _message(max_bytes))


def _message(max_bytes: int) -> str:
    return f"The request body exceeds {max_bytes} bytes."


class BodySizeLimit(HttpMiddleware):
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_large = int(value) > self.max_bytes
                except ValueError:
                    too_large = False  # the HTTP server refuses a malformed Content-Length itself
                if too_large:
                    await self._refuse(send)
                    return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        await send_error(send, 413, "PAYLOAD_TOO_LARGE", _message(self.max_bytes))
