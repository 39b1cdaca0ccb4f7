"""Bad input gets the error envelope of docs/api.md#errors and a 4xx, never a 500, and changes nothing in ZooKeeper."""

from __future__ import annotations

import base64

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ALICE, basic
from tests.api.helpers import tokens_seen

JSON = "application/json"
GOOD_HMAC = "A" * 86 + "=="

CREATE_BODIES = [
    pytest.param(b"{bad json", 422, id="malformed-json"),
    pytest.param(b"[]", 422, id="array-body"),
    pytest.param(b'"text"', 422, id="string-body"),
    pytest.param(b'{"maxLifetimeMs": "100"}', 422, id="lifetime-as-string"),
    pytest.param(b'{"maxLifetimeMs": 1.5}', 422, id="lifetime-as-float"),
    pytest.param(b'{"maxLifetimeMs": true}', 422, id="lifetime-as-bool"),
    pytest.param(b'{"maxLifetimeMs": 9223372036854775808}', 422, id="lifetime-beyond-int64"),
    pytest.param(b'{"maxLifetimeMs": -9223372036854775809}', 422, id="lifetime-below-int64"),
    pytest.param(b'{"maxLifetimeMs": 1e400}', 422, id="lifetime-infinite"),
    pytest.param(b'{"owner": "alice"}', 422, id="owner-without-type"),
    pytest.param(b'{"owner": ":alice"}', 422, id="owner-empty-type"),
    pytest.param(b'{"owner": "User:"}', 422, id="owner-empty-name"),
    pytest.param(b'{"owner": 5}', 422, id="owner-not-string"),
    pytest.param(b'{"owner": "User:a\\u0000b"}', 422, id="owner-control-char"),
    pytest.param(('{"owner": "User:' + "x" * 2000 + '"}').encode(), 422, id="owner-too-long"),
    pytest.param(b'{"renewers": "User:bob"}', 422, id="renewers-not-list"),
    pytest.param(b'{"renewers": ["bob"]}', 422, id="renewer-without-type"),
    pytest.param(b'{"renewers": [null]}', 422, id="renewer-null"),
    pytest.param(('{"renewers": [' + ",".join(['"User:r"'] * 101) + "]}").encode(), 422, id="too-many-renewers"),
    pytest.param(b'{"renewers": ["Group:x"]}', 400, id="group-renewer"),
    pytest.param(b'{"unknown": 1}', 422, id="unknown-field"),
    pytest.param(b'{"maxlifetimems": 5}', 422, id="wrong-case-field"),
]


@pytest.mark.parametrize(("body", "status"), CREATE_BODIES)
def test_bad_create_bodies(edge_client: TestClient, body: bytes, status: int) -> None:
    before = tokens_seen(edge_client)
    response = edge_client.post("/v1/tokens", content=body, headers=basic(ALICE) | {"content-type": "application/json"})
    assert response.status_code == status
    payload = response.json()
    assert set(payload) >= {"error", "message"}
    if status == 422:
        assert payload["error"] == "INVALID_REQUEST"
        assert isinstance(payload["details"], list) and payload["details"]
    assert tokens_seen(edge_client) == before


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/tokens/renew", {"hmac": "not-base64!"}),
        ("/v1/tokens/renew", {"hmac": GOOD_HMAC[:-2]}),
        ("/v1/tokens/renew", {"hmac": GOOD_HMAC.replace("A", "-")}),
        ("/v1/tokens/renew", {}),
        ("/v1/tokens/renew", {"hmac": GOOD_HMAC, "renewTimePeriodMs": "1"}),
        ("/v1/tokens/expire", {"hmac": 12}),
        ("/v1/tokens/expire", {"hmac": GOOD_HMAC, "extra": True}),
        ("/v1/tokens/verify", {"tokenId": "a/b", "hmac": GOOD_HMAC}),
        ("/v1/tokens/verify", {"tokenId": "abc"}),
        ("/v1/tokens/abc/renew", {"renewTimePeriodMs": 1.0}),
        ("/v1/tokens/abc/expire", {"expiryTimePeriodMs": None}),
    ],
)
def test_bad_renew_expire_verify_bodies(edge_client: TestClient, path: str, body: object) -> None:
    edge_client.post("/v1/tokens", json={}, headers=basic(ALICE))
    before = tokens_seen(edge_client)
    response = edge_client.post(path, json=body, headers=basic(ALICE))
    assert response.status_code == 422
    assert response.json()["error"] == "INVALID_REQUEST"
    assert tokens_seen(edge_client) == before


def test_validation_errors_never_echo_the_submitted_hmac(edge_client: TestClient) -> None:
    secretish = "S3cr3t" * 14 + "=="  # 86 chars incl. padding: wrong length, must be refused
    response = edge_client.post("/v1/tokens/renew", json={"hmac": secretish}, headers=basic(ALICE))
    assert response.status_code == 422
    assert "S3cr3t" not in response.text


def test_unknown_hmac_is_not_found(edge_client: TestClient) -> None:
    edge_client.post("/v1/tokens", json={}, headers=basic(ALICE))
    before = tokens_seen(edge_client)
    for path in ("/v1/tokens/renew", "/v1/tokens/expire"):
        response = edge_client.post(path, json={"hmac": GOOD_HMAC}, headers=basic(ALICE))
        assert response.status_code == 404
        assert response.json()["code"] == 62
    assert tokens_seen(edge_client) == before


@pytest.mark.parametrize("token_id", ["a%2Fb", "x" * 65, "a.b", "%C3%A9"])
def test_malformed_token_ids_in_paths(edge_client: TestClient, token_id: str) -> None:
    response = edge_client.get(f"/v1/tokens/{token_id}", headers=basic(ALICE))
    assert response.status_code in (404, 422)
    assert "error" in response.json()


def test_unknown_token_id_is_not_found(edge_client: TestClient) -> None:
    for method, path in (("GET", ""), ("POST", "/renew"), ("POST", "/expire")):
        response = edge_client.request(
            method, f"/v1/tokens/E8gTWaIxRUOaSRH7wY3N1w{path}", headers=basic(ALICE) | {"content-type": JSON}
        )
        assert response.status_code == 404
        assert response.json()["code"] == 62


@pytest.mark.parametrize(
    "query",
    ["owner=alice", "owner=User:", "limit=0", "limit=1001", "limit=x", "cursor=%%%", "owner=" + "User:x&owner=" * 101],
)
def test_bad_describe_queries(edge_client: TestClient, query: str) -> None:
    response = edge_client.get(f"/v1/tokens?{query}", headers=basic(ALICE))
    assert response.status_code == 422
    assert response.json()["error"] == "INVALID_REQUEST"


def test_body_too_large_is_413(edge_client: TestClient) -> None:
    before = tokens_seen(edge_client)
    response = edge_client.post(
        "/v1/tokens",
        content=b'{"renewers": [' + b'"User:x",' * 20_000 + b'"User:y"]}',
        headers=basic(ALICE) | {"content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["error"] == "PAYLOAD_TOO_LARGE"
    assert tokens_seen(edge_client) == before


def test_unknown_route_and_method_use_the_envelope(edge_client: TestClient) -> None:
    missing = edge_client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"] == "NOT_FOUND"
    wrong = edge_client.delete("/v1/tokens", headers=basic(ALICE))
    assert wrong.status_code == 405
    assert wrong.json()["error"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Basic",
        "Basic !!!",
        "Basic " + "YWxpY2U=",  # "alice" without a colon
        "Basic YWxpY2U6d3Jvbmc=",  # alice:wrong
        "Basic bm9ib2R5OnB3",  # nobody:pw
        "Bearer abc",
        "Bearer E8gTWaIxRUOaSRH7wY3N1w:" + GOOD_HMAC,
        "Bearer E8gTWaIxRUOaSRH7wY3N1w:not-an-hmac",
        "Digest x",
        "Basic " + "A" * 5000,
    ],
)
def test_bad_credentials_get_401_with_a_challenge(edge_client: TestClient, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = edge_client.post("/v1/tokens", json={}, headers=headers)
    assert response.status_code == 401
    assert "Basic" in response.headers["www-authenticate"]
    assert "Bearer" in response.headers["www-authenticate"]
    assert response.json()["error"] == "AUTHENTICATION_FAILED"


@pytest.mark.parametrize(
    ("request_headers", "challenge"),
    [
        ({}, 'Basic realm="kts", Bearer realm="kts"'),  # curl, httpx, Kafka's tools
        ({"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}, 'Basic realm="kts", Bearer realm="kts"'),
        ({"Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "cors"}, 'xBasic realm="kts", Bearer realm="kts"'),
        ({"X-Requested-With": "XMLHttpRequest"}, 'xBasic realm="kts", Bearer realm="kts"'),
    ],
)
def test_a_pages_script_gets_a_challenge_browsers_do_not_prompt_for(
    edge_client: TestClient, request_headers: dict[str, str], challenge: str
) -> None:
    """A browser answers a Basic challenge to fetch or XHR with its own password prompt, and the page's script
    (Swagger UI's Execute) never sees the 401; API clients and a navigation get the standard challenge."""
    wrong = {"Authorization": "Basic " + base64.b64encode(b"alice:wrong").decode()}
    response = edge_client.post("/v1/tokens", json={}, headers={**wrong, **request_headers})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == challenge
    assert response.json()["error"] == "AUTHENTICATION_FAILED"
