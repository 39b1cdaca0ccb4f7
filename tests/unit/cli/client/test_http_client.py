"""``KtsClient``'s error translation: the service's envelope becomes one RequestRefused line, no answer
becomes ServiceUnreachable. Responses are built by hand; no fake server."""

from __future__ import annotations

import httpx
import pytest

from app.cli.client.command_config import CommandConfig, UserPassword
from app.cli.client.http_client import KtsClient, RequestRefused, ServiceUnreachable, refusal
from app.cli.server.embedded_zookeeper import free_port


def response(
    status: int, body: object = None, *, text: str | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    if text is not None:
        return httpx.Response(status, text=text, headers=headers)
    return httpx.Response(status, json=body, headers=headers)


def test_a_kafka_error_keeps_its_code_and_message() -> None:
    refused = refusal(
        response(410, {"error": "DELEGATION_TOKEN_EXPIRED", "message": "The token has already expired.", "code": 66})
    )
    assert (refused.status, refused.code, refused.error, str(refused)) == (
        410,
        66,
        "DELEGATION_TOKEN_EXPIRED",
        "The token has already expired.",
    )
    assert not refused.transient


def test_a_validation_error_names_the_first_field() -> None:
    body = {
        "error": "INVALID_REQUEST",
        "message": "The request does not validate.",
        "details": [{"loc": ["body", "owner"], "msg": "A principal must have a type,\nas in User:alice.", "type": "x"}],
    }
    refused = refusal(response(422, body))
    assert str(refused) == "The request does not validate: owner: A principal must have a type, as in User:alice."
    assert refused.code is None


def test_unavailable_is_transient_and_keeps_retry_after() -> None:
    refused = refusal(
        response(
            503, {"error": "STORE_UNAVAILABLE", "message": "ZooKeeper is unreachable."}, headers={"Retry-After": "2"}
        )
    )
    assert refused.transient
    assert refused.retry_after_s == 2.0


@pytest.mark.parametrize(("status", "transient"), [(500, True), (502, True), (409, True), (401, False), (403, False)])
def test_which_statuses_are_worth_retrying(status: int, transient: bool) -> None:
    assert refusal(response(status, {"error": "E", "message": "m"})).transient is transient


def test_a_body_that_is_not_the_envelope_still_gives_one_line() -> None:
    refused = refusal(response(502, text="<html>\n<h1>Bad gateway</h1>\n</html>"))
    assert str(refused) == "The service answered HTTP 502 Bad Gateway."
    assert refused.transient


def test_connection_refused_is_service_unreachable() -> None:
    server = f"http://127.0.0.1:{free_port()}"
    with KtsClient(server, CommandConfig(UserPassword("alice", "never-echo-me"))) as client:
        with pytest.raises(ServiceUnreachable) as excinfo:
            client.describe_tokens()
    assert str(excinfo.value).startswith(f"cannot reach {server}: ")
    assert "never-echo-me" not in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


def test_request_refused_is_a_plain_exception_with_fields() -> None:
    refused = RequestRefused(
        403, 65, "User:a may not create tokens for User:b.", error="DELEGATION_TOKEN_AUTHORIZATION_FAILED"
    )
    assert refused.message == str(refused)


def test_a_humane_validation_message_is_printed_once() -> None:
    sentence = "The hmac field must be the 88-character standard base64 HMAC of a token."
    body = {
        "error": "INVALID_REQUEST",
        "message": sentence,
        "details": [{"loc": ["body", "hmac"], "msg": sentence, "type": "string_pattern_mismatch"}],
    }
    assert str(refusal(response(422, body))) == sentence
