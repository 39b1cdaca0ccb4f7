"""Authenticating in the endpoint's thread (app/api/authenticated_route.py) changes nothing a client sees: a request
that is unauthenticated and invalid is refused as unauthenticated, its failed login audited once, as when the
caller was a dependency of its own."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ADMIN, ALICE, basic

WRONG = basic((ALICE[0], "wrong-password"))
JSON = {"content-type": "application/json"}


def _authentication_events(client: TestClient) -> list[dict[str, Any]]:
    events = client.get("/v1/audit?limit=1000&action=authentication", headers=basic(ADMIN)).json()["events"]
    return [event for event in events if event["action"] == "authentication"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("POST", "/v1/tokens", b'{"maxLifetimeMs": "soon"}', id="invalid-body"),
        pytest.param("POST", "/v1/tokens", b'{"unknown": 1}', id="unknown-field"),
        pytest.param("GET", "/v1/tokens?limit=0", None, id="invalid-query"),
        pytest.param("GET", "/v1/tokens/not%20a%20token", None, id="invalid-path"),
        pytest.param("POST", "/v1/tokens/verify", b"{}", id="missing-fields"),
        pytest.param("GET", "/v1/acls?patternType=nonsense", None, id="invalid-acl-filter"),
    ],
)
def test_an_unauthenticated_invalid_request_is_refused_as_unauthenticated(
    edge_client: TestClient, method: str, path: str, body: bytes | None
) -> None:
    before = len(_authentication_events(edge_client))
    response = edge_client.request(method, path, content=body, headers=WRONG | JSON)
    assert response.status_code == 401
    assert response.json()["error"] == "AUTHENTICATION_FAILED"
    assert "WWW-Authenticate" in response.headers
    events = _authentication_events(edge_client)
    assert len(events) == before + 1  # audited once: the refusal is not authenticated a second time
    assert (events[0]["outcome"], events[0]["principal"]) == ("denied", f"User:{ALICE[0]}")


def test_an_authenticated_invalid_request_gets_its_validation_error(edge_client: TestClient) -> None:
    before = len(_authentication_events(edge_client))
    response = edge_client.post("/v1/tokens", content=b'{"maxLifetimeMs": "soon"}', headers=basic(ALICE) | JSON)
    assert response.status_code == 422
    assert response.json()["error"] == "INVALID_REQUEST"
    assert len(_authentication_events(edge_client)) == before


def test_a_body_that_is_not_json_is_refused_before_authentication_as_ever(edge_client: TestClient) -> None:
    """FastAPI decodes the body before it solves any dependency: this 422 never depended on the caller."""
    response = edge_client.post("/v1/tokens", content=b"{bad json", headers=WRONG | JSON)
    assert response.status_code == 422


def test_a_valid_request_is_answered_for_its_caller(edge_client: TestClient) -> None:
    created = edge_client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert created.status_code == 201
    assert created.json()["owner"] == f"User:{ALICE[0]}"
    assert edge_client.post("/v1/tokens", json={}, headers=WRONG).status_code == 401
