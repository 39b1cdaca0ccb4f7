"""Gives every request an id (kept from a well-formed ``X-Request-ID``, else new) and makes it and the
client address available to the audit trail; the id is echoed in the response."""

from __future__ import annotations

import re
import uuid

from starlette.types import Message, Receive, Scope, Send

from app.api.http_middleware import HttpMiddleware
from app.domain.audit import RequestContext
from app.service.audit import request_context

_VALID_ID = re.compile(r"[A-Za-z0-9._\-]{1,64}")


class RequestContextMiddleware(HttpMiddleware):
    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        given = dict(scope.get("headers", [])).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _VALID_ID.fullmatch(given) else uuid.uuid4().hex
        client = scope.get("client")
        token = request_context.set(RequestContext(request_id, client[0] if client else None))

        async def with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, with_id)
        finally:
            request_context.reset(token)
