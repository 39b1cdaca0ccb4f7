"""The one error table: every domain error has its HTTP status and envelope."""

from __future__ import annotations

import json

import pytest

from app.api.errors import kts_error_response, status_for
from app.domain import errors


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (errors.ClusterAuthorizationFailed("x"), 403, 31),
        (errors.TokenNotFound("x"), 404, 62),
        (errors.TokenOwnerMismatch("x"), 403, 63),
        (errors.TokenRequestNotAllowed("x"), 403, 64),
        (errors.TokenAuthorizationFailed("x"), 403, 65),
        (errors.TokenExpired("x"), 410, 66),
        (errors.InvalidPrincipalType("x"), 400, 67),
        (errors.InvalidInput("x"), 422, None),
        (errors.InvalidPrincipal("x"), 422, None),
        (errors.NotAuthenticated("x"), 401, None),
        (errors.CredentialNotFound("x"), 404, None),
        (errors.ConcurrentModification("x"), 409, None),
        (errors.StoreUnavailable("x"), 503, None),
    ],
)
def test_status_and_envelope(error: errors.KtsError, status: int, code: int | None) -> None:
    assert status_for(error) == status
    response = kts_error_response(error)
    body = json.loads(bytes(response.body))
    assert response.status_code == status
    assert body["message"] == "x"
    assert body.get("code") == code
    if status == 401:
        assert "Basic" in response.headers["www-authenticate"]
    if status == 503:
        assert int(response.headers["retry-after"]) > 0
    if status == 422:
        assert body["error"] == "INVALID_REQUEST"
        assert body["details"] == []
