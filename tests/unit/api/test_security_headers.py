"""SecurityHeaders as a pure ASGI layer: streamed pages, oversized pages, headers the app set itself."""

from __future__ import annotations

import asyncio
import base64
import hashlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.security_headers import API_POLICY, MAX_PAGE_BYTES, SecurityHeaders, page_policy


def _app(content_type: bytes, chunks: list[bytes], extra: list[tuple[bytes, bytes]] | None = None) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", content_type), *(extra or [])]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for index, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": index < len(chunks) - 1})

    return app


def _run(app: ASGIApp, path: str = "/x", scheme: str = "http") -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "scheme": scheme, "headers": []}
    asyncio.run(SecurityHeaders(app)(scope, receive, send))
    return sent


def _headers(message: Message) -> dict[bytes, list[bytes]]:
    found: dict[bytes, list[bytes]] = {}
    for name, value in message["headers"]:
        found.setdefault(name, []).append(value)
    return found


def test_a_streamed_page_is_hashed_whole() -> None:
    chunks = [b"<html><script>let a", b" = 1;</script><script src='/s.js'></script>", b"</html>"]
    sent = _run(_app(b"text/html; charset=utf-8", chunks))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"".join(chunks) and not sent[1].get("more_body")
    digest = base64.b64encode(hashlib.sha256(b"let a = 1;").digest()).decode()
    (policy,) = _headers(sent[0])[b"content-security-policy"]
    assert f"script-src 'self' 'sha256-{digest}';".encode() in policy
    assert b"unsafe-inline'; img-src" in policy and b"script-src 'self' 'unsafe-inline'" not in policy


def test_a_page_without_inline_scripts_allows_only_this_origin() -> None:
    assert "script-src 'self'; style-src" in page_policy(b"<html><script src='/a.js'></script></html>")


def test_an_oversized_page_gets_the_strict_policy_and_streams_on() -> None:
    half = b"x" * (MAX_PAGE_BYTES // 2 + 1)
    sent = _run(_app(b"text/html", [b"<html>", half, half, b"tail", b"</html>"]))
    assert [m["type"] for m in sent] == ["http.response.start", *["http.response.body"] * 3]
    assert _headers(sent[0])[b"content-security-policy"] == [API_POLICY.encode()]
    assert sent[1]["body"] == b"<html>" + half + half and sent[1]["more_body"]
    assert [m["body"] for m in sent[2:]] == [b"tail", b"</html>"]


def test_other_responses_pass_through_chunk_by_chunk_with_our_headers_only_once() -> None:
    app = _app(b"application/json", [b"[1,", b"2]"], [(b"cache-control", b"max-age=600"), (b"x-other", b"kept")])
    sent = _run(app, scheme="https")
    assert [m.get("body") for m in sent[1:]] == [b"[1,", b"2]"]
    headers = _headers(sent[0])
    assert headers[b"cache-control"] == [b"no-store"]
    assert headers[b"x-other"] == [b"kept"]
    assert headers[b"x-content-type-options"] == [b"nosniff"]
    assert headers[b"strict-transport-security"] == [b"max-age=31536000"]
    assert headers[b"content-security-policy"] == [API_POLICY.encode()]


def test_docs_assets_keep_their_own_caching() -> None:
    app = _app(b"text/javascript", [b"x"], [(b"cache-control", b"max-age=600")])
    headers = _headers(_run(app, path="/docs/static/swagger-ui-bundle.js")[0])
    assert headers[b"cache-control"] == [b"max-age=600"]
    assert b"strict-transport-security" not in headers
