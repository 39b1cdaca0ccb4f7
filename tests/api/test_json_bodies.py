"""CSRF: requests that change state take only JSON bodies, so a cross-site HTML form cannot act."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.api.conftest import ADMIN, ALICE, basic
from tests.api.helpers import tokens_seen

FORM = "application/x-www-form-urlencoded"
NOT_JSON = [FORM, "multipart/form-data; boundary=x", "text/plain", "text/plain; charset=utf-8", "application/xml"]


def _create(edge_client: TestClient) -> str:
    response = edge_client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert response.status_code == 201
    token_id: str = response.json()["tokenId"]
    return token_id


def _assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 415
    body = response.json()
    assert body["error"] == "UNSUPPORTED_MEDIA_TYPE"
    assert "Content-Type: application/json" in body["message"]


def test_a_cross_site_form_with_an_empty_body_does_not_expire_a_token(edge_client: TestClient) -> None:
    token_id = _create(edge_client)
    before = tokens_seen(edge_client)
    # What a browser sends for <form method=post action=.../expire> with no fields, credentials attached.
    attack = edge_client.post(
        f"/v1/tokens/{token_id}/expire", content=b"", headers=basic(ALICE) | {"content-type": FORM}
    )
    _assert_refused(attack)
    assert tokens_seen(edge_client) == before
    # Positive control: the same request as JSON does expire it.
    allowed = edge_client.post(
        f"/v1/tokens/{token_id}/expire", content=b"", headers=basic(ALICE) | {"content-type": "application/json"}
    )
    assert allowed.status_code == 200
    assert edge_client.get(f"/v1/tokens/{token_id}", headers=basic(ADMIN)).status_code == 404


@pytest.mark.parametrize("content_type", NOT_JSON)
def test_other_content_types_are_refused(edge_client: TestClient, content_type: str) -> None:
    before = tokens_seen(edge_client)
    _assert_refused(
        edge_client.post("/v1/tokens", content=b"{}", headers=basic(ALICE) | {"content-type": content_type})
    )
    assert tokens_seen(edge_client) == before


def test_a_missing_content_type_is_refused_on_every_state_changing_method(edge_client: TestClient) -> None:
    headers = basic(ADMIN)
    _assert_refused(edge_client.post("/v1/tokens", headers=headers))
    _assert_refused(edge_client.post("/v1/tokens", content=b"{}", headers=headers))
    _assert_refused(edge_client.put("/v1/users/frank/credentials", content=b"{}", headers=headers))
    _assert_refused(edge_client.patch("/v1/tokens", content=b"{}", headers=headers))
    _assert_refused(
        edge_client.request(
            "DELETE", "/v1/acls?principal=User:x", content=b"x=1", headers=headers | {"content-type": FORM}
        )
    )


def test_a_delete_without_a_body_needs_no_content_type(edge_client: TestClient) -> None:
    assert edge_client.delete("/v1/acls?principal=User:nobody", headers=basic(ADMIN)).json() == {"deleted": []}


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"])
def test_an_empty_json_body_means_all_defaults(edge_client: TestClient, content_type: str) -> None:
    created = edge_client.post("/v1/tokens", content=b"", headers=basic(ALICE) | {"content-type": content_type})
    assert created.status_code == 201
    assert created.json()["owner"] == "User:alice"
    token_id = created.json()["tokenId"]
    renewed = edge_client.post(
        f"/v1/tokens/{token_id}/renew", content=b"", headers=basic(ALICE) | {"content-type": content_type}
    )
    assert renewed.status_code == 200


def test_reads_need_no_content_type(edge_client: TestClient) -> None:
    assert edge_client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200


def test_every_state_changing_operation_documents_the_415() -> None:
    paths = create_app().openapi()["paths"]
    operations = [
        (path, method, operation)
        for path, item in paths.items()
        for method, operation in item.items()
        if method in {"post", "put", "patch", "delete"}
    ]
    assert operations
    for path, method, operation in operations:
        assert "415" in operation["responses"], f"{method.upper()} {path}"
