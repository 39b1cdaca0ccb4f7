"""Requests that change state take only JSON bodies, so a cross-site HTML form cannot act (CSRF).

A browser sends a cross-site form (``application/x-www-form-urlencoded``, ``multipart/form-data``,
``text/plain``) without asking the server first; a ``Content-Type: application/json`` request it sends
only after a CORS preflight, which kts never grants. So every POST, PUT and PATCH, and a DELETE that carries a
body, must say ``application/json`` (parameters such as ``charset`` allowed), even with an empty body, which
means all defaults. Everything else gets 415 before any routing, authentication or parsing (pure ASGI).
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.api.http_middleware import HttpMiddleware, send_error

JSON_MEDIA_TYPE = "application/json"
UNSUPPORTED_MEDIA_TYPE_MESSAGE = (
    "Send the request body as JSON with the header Content-Type: application/json "
    "(an empty body or {} means all defaults)."
)
_ALWAYS_CHECKED = frozenset({"POST", "PUT", "PATCH"})


def is_json(content_type: str | None) -> bool:
    """``application/json`` with any parameters, compared case-insensitively as RFC 9110 says."""
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == JSON_MEDIA_TYPE


def _carries_body(headers: dict[bytes, bytes]) -> bool:
    if b"transfer-encoding" in headers:
        return True
    try:
        return int(headers.get(b"content-length", b"0")) > 0
    except ValueError:
        return True  # a malformed length: be strict


class JsonBodiesOnly(HttpMiddleware):
    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._must_be_json(scope):
            await self.app(scope, receive, send)
            return
        await send_error(send, 415, "UNSUPPORTED_MEDIA_TYPE", UNSUPPORTED_MEDIA_TYPE_MESSAGE)

    @staticmethod
    def _must_be_json(scope: Scope) -> bool:
        method = scope["method"]
        headers = dict(scope.get("headers", []))
        if method not in _ALWAYS_CHECKED and not (method == "DELETE" and _carries_body(headers)):
            return False
        content_type = headers.get(b"content-type")
        return not is_json(content_type.decode("latin-1") if content_type is not None else None)
