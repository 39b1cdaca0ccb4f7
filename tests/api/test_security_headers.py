"""Security headers on every response of the real app, errors and middleware-made responses included."""

from __future__ import annotations

import base64
import hashlib
import re

import httpx
import pytest
from fastapi.testclient import TestClient

from app.api.limits import MAX_BODY_BYTES
from app.api.security_headers import API_POLICY, page_policy
from tests.api.conftest import ALICE, basic

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


def _assert_common(headers: httpx.Headers) -> None:
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", "/healthz", {}, 200),
        ("GET", "/openapi.json", {}, 200),
        ("GET", "/metrics", {}, 200),
        ("GET", "/v1/tokens", {}, 401),
        ("GET", "/v1/nowhere", {}, 404),
        ("POST", "/v1/tokens", {"content": b" " * (MAX_BODY_BYTES + 1), "headers": {"content-type": JSON}}, 413),
        ("POST", "/v1/tokens", {"content": b"a=1", "headers": {"content-type": FORM}}, 415),
        ("POST", "/v1/tokens/verify", {"json": {"tokenId": "x"}}, 422),
    ],
)
def test_api_responses_are_not_cached_sniffed_or_framed(
    edge_client: TestClient, method: str, path: str, kwargs: dict[str, object], status: int
) -> None:
    kwargs = dict(kwargs)
    content_type = kwargs.pop("headers", {})
    assert isinstance(content_type, dict)
    headers = (basic(ALICE) if status == 422 else {}) | content_type
    response = edge_client.request(method, path, headers=headers, **kwargs)
    assert response.status_code == status
    _assert_common(response.headers)
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["content-security-policy"] == API_POLICY
    assert "strict-transport-security" not in response.headers  # plain http


def test_a_new_token_is_never_cached(edge_client: TestClient) -> None:
    created = edge_client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    assert created.headers.get_list("cache-control") == ["no-store"]


def test_https_responses_carry_hsts(edge_client: TestClient) -> None:
    response = edge_client.get("https://testserver/healthz")
    assert response.headers["strict-transport-security"] == "max-age=31536000"


def test_the_docs_page_runs_only_scripts_of_this_origin(edge_client: TestClient) -> None:
    """Swagger UI starts from a file of ours, not an inline script, so the page needs no script hash."""
    page = edge_client.get("/docs")
    assert page.status_code == 200
    _assert_common(page.headers)
    policy = dict(part.strip().split(" ", 1) for part in page.headers["content-security-policy"].split(";"))
    assert re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL) == []
    assert policy["script-src"] == "'self'"
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert int(page.headers["content-length"]) == len(page.content)


def test_an_inline_script_is_allowed_by_its_hash_alone() -> None:
    script = b"window.started = true;"
    digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
    policy = page_policy(b"<html><script>" + script + b"</script></html>")
    assert f"script-src 'self' 'sha256-{digest}';" in policy
    assert "unsafe-inline'; img-src" in policy and "script-src 'self' 'unsafe-inline'" not in policy


def test_docs_assets_may_be_cached(edge_client: TestClient) -> None:
    asset = edge_client.get("/docs/static/swagger-ui-bundle.js")
    assert asset.status_code == 200
    _assert_common(asset.headers)
    assert "no-store" not in asset.headers.get("cache-control", "")
