"""Every 422 says in one sentence which field is wrong and what it allows, never a regex or a type dump."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ADMIN, ALICE, basic

GOOD_HMAC = "A" * 86 + "=="


def _refusal(response: object) -> str:
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert body["error"] == "INVALID_REQUEST"
    assert body["details"] and body["details"][0]["msg"] == body["message"]
    message: str = body["message"]
    assert "pattern" not in message and "^" not in message and "Input should" not in message
    assert message.endswith(".") and message.count(". ") == 0, message
    return message


def test_a_bad_hmac_names_the_field_and_the_format(edge_client: TestClient) -> None:
    response = edge_client.post("/v1/tokens/renew", json={"hmac": "not-base64!"}, headers=basic(ALICE))
    assert _refusal(response) == (
        "The hmac field must be the 88-character standard base64 HMAC of a token "
        "(letters, digits, + and /, ending in ==)."
    )
    assert "not-base64!" not in response.text


def test_a_bad_principal_says_what_a_principal_looks_like(edge_client: TestClient) -> None:
    message = _refusal(edge_client.post("/v1/tokens", json={"owner": "alice"}, headers=basic(ALICE)))
    assert message.startswith("The owner field is not valid: ")
    assert "User:alice" in message


def test_a_bad_renewer_names_its_position(edge_client: TestClient) -> None:
    message = _refusal(edge_client.post("/v1/tokens", json={"renewers": ["User:a", "bob"]}, headers=basic(ALICE)))
    assert message.startswith("The renewers[1] field is not valid: ")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/audit?since=-5", "The since query parameter must be at least 0."),
        ("/v1/tokens?limit=0", "The limit query parameter must be at least 1."),
    ],
)
def test_a_negative_or_zero_bound_says_the_bound(edge_client: TestClient, path: str, expected: str) -> None:
    assert _refusal(edge_client.get(path, headers=basic(ADMIN))) == expected


def test_too_few_iterations_say_the_minimum(edge_client: TestClient) -> None:
    response = edge_client.put(
        "/v1/users/frank/credentials",
        json={"mechanism": "SCRAM-SHA-512", "password": "pw", "iterations": -1},
        headers=basic(ADMIN),
    )
    assert _refusal(response) == "The iterations field must be at least 4096."


def test_an_unknown_field_is_named(edge_client: TestClient) -> None:
    response = edge_client.post("/v1/tokens", json={"maxlifetimems": 5}, headers=basic(ALICE))
    assert _refusal(response) == (
        "The maxlifetimems field is not one this endpoint accepts; remove it (names are case-sensitive)."
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"maxLifetimeMs": "100"}, "The maxLifetimeMs field must be a whole number."),
        ({"renewers": "User:bob"}, "The renewers field must be a list."),
        ({"owner": 5}, "The owner field must be a string."),
    ],
)
def test_a_wrong_type_says_the_type_in_words(edge_client: TestClient, body: dict[str, object], expected: str) -> None:
    assert _refusal(edge_client.post("/v1/tokens", json=body, headers=basic(ALICE))) == expected


def test_a_missing_field_and_a_bad_enum(edge_client: TestClient) -> None:
    assert (
        _refusal(edge_client.post("/v1/tokens/renew", json={}, headers=basic(ALICE))) == "The hmac field is required."
    )
    message = _refusal(
        edge_client.put("/v1/users/frank/credentials", json={"mechanism": "MD5", "password": "x"}, headers=basic(ADMIN))
    )
    assert message == "The mechanism field must be one of 'SCRAM-SHA-256' or 'SCRAM-SHA-512'."


def test_malformed_json_says_so(edge_client: TestClient) -> None:
    response = edge_client.post(
        "/v1/tokens", content=b"{bad", headers=basic(ALICE) | {"content-type": "application/json"}
    )
    assert _refusal(response) == "The request body is not valid JSON."


def test_an_empty_object_means_all_defaults(edge_client: TestClient) -> None:
    created = edge_client.post("/v1/tokens", json={}, headers=basic(ALICE))
    assert created.status_code == 201, created.text
    assert created.json()["owner"] == "User:alice" and created.json()["renewers"] == []


def test_a_body_without_json_content_type_is_told_what_to_send(edge_client: TestClient) -> None:
    response = edge_client.post("/v1/tokens", content=b"{}", headers=basic(ALICE) | {"content-type": "text/plain"})
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.json()["message"]
