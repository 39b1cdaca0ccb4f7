"""Security headers on every response (pure ASGI, so responses made by other middleware get them too).

- ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer`` everywhere.
- ``Cache-Control: no-store`` on everything but the docs' static assets: token bodies carry HMACs and must
  not sit in a browser or proxy cache.
- ``Strict-Transport-Security`` on https only (on plain http browsers ignore it, and a mesh terminating
  TLS in front of kts sets its own).
- ``Content-Security-Policy``: JSON responses allow nothing at all. An HTML page (only Swagger UI at
  ``/docs``) may load scripts, styles, images and data from this origin, plus exactly the inline scripts
  it carries: their SHA-256 hashes are computed from the page itself, so no ``'unsafe-inline'`` scripts.
  Nothing may frame any response.
"""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.types import Message, Receive, Scope, Send

from app.api.http_middleware import HttpMiddleware

HSTS = b"max-age=31536000"
API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
PAGE_POLICY = (
    "default-src 'none'; script-src {scripts}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
CACHEABLE_PREFIX = "/docs/static/"
MAX_PAGE_BYTES = 1 << 20  # HTML is buffered to hash its scripts; kts's one page is a few KiB
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)

Headers = list[tuple[bytes, bytes]]


def page_policy(html: bytes) -> str:
    """The policy of an HTML page: this origin, plus the inline scripts the page itself carries."""
    hashes = [
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(html)
    ]
    return PAGE_POLICY.format(scripts=" ".join(["'self'", *hashes]))


def security_headers(scheme: str, path: str) -> Headers:
    """The headers every response on ``path`` gets, the Content-Security-Policy apart."""
    headers = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
    if scheme == "https":
        headers.append((b"strict-transport-security", HSTS))
    if not path.startswith(CACHEABLE_PREFIX):
        headers.append((b"cache-control", b"no-store"))
    return headers


class SecurityHeaders(HttpMiddleware):
    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        ours = security_headers(scope.get("scheme", "http"), scope.get("path", ""))
        replaced = {name for name, _ in ours} | {b"content-security-policy"}
        page: Message | None = None  # the start of an HTML response, held until its body is complete
        body = b""

        async def with_headers(message: Message) -> None:
            nonlocal page, body
            if message["type"] == "http.response.start":
                headers: Headers = [item for item in message.get("headers", []) if item[0] not in replaced]
                headers += ours
                if _is_html(headers):
                    page = {**message, "headers": headers}
                    return
                message = {**message, "headers": [*headers, (b"content-security-policy", API_POLICY.encode())]}
            elif message["type"] == "http.response.body" and page is not None:
                body += message.get("body", b"")
                if message.get("more_body", False) and len(body) <= MAX_PAGE_BYTES:
                    return
                policy = page_policy(body) if len(body) <= MAX_PAGE_BYTES else API_POLICY
                await send({**page, "headers": [*page["headers"], (b"content-security-policy", policy.encode())]})
                page = None
                message = {**message, "body": body}
            await send(message)

        await self.app(scope, receive, with_headers)


def _is_html(headers: Headers) -> bool:
    return any(name == b"content-type" and value.startswith(b"text/html") for name, value in headers)
