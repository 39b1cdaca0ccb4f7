"""Every input limit holds exactly at its bound, is refused one past it at the edge (422 naming the field;
413 for the body size) and is written in the OpenAPI document, where clients and fuzzers read it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.limits import MAX_BODY_BYTES
from app.api.routers import audit, tokens
from app.api.schemas.common import INT64_MAX, INT64_MIN, MAX_OWNER_FILTERS, MAX_RENEWERS
from app.api.schemas.users import MAX_PASSWORD_LENGTH, MAX_USER_NAME_LENGTH
from app.domain.acl import MAX_RESOURCE_NAME_LENGTH
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS
from app.domain.principal import MAX_PRINCIPAL_LENGTH
from app.main import create_app
from tests.api.conftest import ADMIN, ALICE, basic
from tests.api.helpers import eventually, kafka_acls_sh_writes

Send = Callable[[TestClient, int], httpx.Response]


def _principal(length: int) -> str:
    return "User:" + "p" * (length - len("User:"))


def _create(edge_client: TestClient, user: tuple[str, str] = ALICE, **body: object) -> httpx.Response:
    return edge_client.post("/v1/tokens", json=body, headers=basic(user))


def _letters(n: int) -> str:
    return "a" * n


def _quoted_principal(n: int) -> str:
    return quote(_principal(n))


def _get(template: str, value: Callable[[int], str] = str, user: tuple[str, str] = ADMIN) -> Send:
    """A GET of ``template`` with ``{}`` replaced by ``value(n)``: the size itself unless told otherwise."""
    return lambda client, n: client.get(template.format(value(n)), headers=basic(user))


def _owner_filters(edge_client: TestClient, n: int) -> httpx.Response:
    query = "&".join(f"owner=User:o{i}" for i in range(n))
    return edge_client.get(f"/v1/tokens?{query}", headers=basic(ALICE))


def _token_cursor(edge_client: TestClient, n: int) -> httpx.Response:
    # The longest cursor names the longest token id; one character more cannot be one this service returned.
    cursor = tokens._encode_cursor("t" * 64)
    assert cursor is not None and len(cursor) == tokens.MAX_CURSOR_LENGTH
    return edge_client.get(f"/v1/tokens?cursor={cursor + 'A' * (n - len(cursor))}", headers=basic(ALICE))


def _credential(edge_client: TestClient, name: str = "dave", **fields: object) -> httpx.Response:
    body = {"mechanism": "SCRAM-SHA-256", "password": "pw"} | fields
    return edge_client.put(f"/v1/users/{name}/credentials", json=body, headers=basic(ADMIN))


def _new_acl(edge_client: TestClient, **fields: str) -> httpx.Response:
    acl = {
        "resourceType": "DelegationToken",
        "resourceName": "E8gTWaIxRUOaSRH7wY3N1w",
        "principal": "User:bob",
        "operation": "Describe",
        "permissionType": "Allow",
    }
    return edge_client.post("/v1/acls", json=acl | fields, headers=basic(ADMIN))


@dataclass(frozen=True)
class Limit:
    """``send(client, bound)`` answers ``ok``; ``send(client, bound + step)`` is a 422 naming ``field``."""

    id: str
    bound: int
    send: Send
    ok: int
    field: str
    step: int = 1


LIMITS = [
    Limit(
        "renewers", MAX_RENEWERS, lambda c, n: _create(c, renewers=[f"User:r{i}" for i in range(n)]), 201, "renewers"
    ),
    Limit("owner-length", MAX_PRINCIPAL_LENGTH, lambda c, n: _create(c, ADMIN, owner=_principal(n)), 201, "owner"),
    Limit("renewer-length", MAX_PRINCIPAL_LENGTH, lambda c, n: _create(c, renewers=[_principal(n)]), 201, "renewers"),
    Limit("lifetime-max", INT64_MAX, lambda c, n: _create(c, maxLifetimeMs=n), 201, "maxLifetimeMs"),
    Limit("lifetime-min", INT64_MIN, lambda c, n: _create(c, maxLifetimeMs=n), 201, "maxLifetimeMs", step=-1),
    Limit("owner-filters", MAX_OWNER_FILTERS, _owner_filters, 200, "owner"),
    Limit(
        "owner-filter-length", MAX_PRINCIPAL_LENGTH, _get("/v1/tokens?owner={}", _quoted_principal, ALICE), 200, "owner"
    ),
    Limit("tokens-page", tokens.MAX_PAGE, _get("/v1/tokens?limit={}", user=ALICE), 200, "limit"),
    Limit("tokens-page-min", 1, _get("/v1/tokens?limit={}", user=ALICE), 200, "limit", step=-1),
    Limit("tokens-cursor", tokens.MAX_CURSOR_LENGTH, _token_cursor, 200, "cursor"),
    Limit("token-id", 64, _get("/v1/tokens/{}", _letters, ALICE), 404, "token_id"),
    Limit("acl-principal", MAX_PRINCIPAL_LENGTH, lambda c, n: _new_acl(c, principal=_principal(n)), 201, "principal"),
    Limit(
        "acl-resource-name",
        MAX_RESOURCE_NAME_LENGTH,
        lambda c, n: _new_acl(c, resourceName="r" * n),
        201,
        "resourceName",
    ),
    Limit(
        "acl-filter-principal", MAX_PRINCIPAL_LENGTH, _get("/v1/acls?principal={}", _quoted_principal), 200, "principal"
    ),
    Limit(
        "acl-filter-resource", MAX_RESOURCE_NAME_LENGTH, _get("/v1/acls?resourceName={}", _letters), 200, "resourceName"
    ),
    Limit("user-name", MAX_USER_NAME_LENGTH, lambda c, n: _credential(c, "u" * n), 200, "name"),
    Limit("password", MAX_PASSWORD_LENGTH, lambda c, n: _credential(c, password="p" * n), 200, "password"),
    Limit("iterations-max", MAX_ITERATIONS, lambda c, n: _credential(c, iterations=n), 200, "iterations"),
    Limit("iterations-min", MIN_ITERATIONS, lambda c, n: _credential(c, iterations=n), 200, "iterations", step=-1),
    Limit("audit-page", audit.MAX_PAGE, _get("/v1/audit?limit={}"), 200, "limit"),
    Limit("audit-cursor", INT64_MAX, _get("/v1/audit?cursor={}"), 200, "cursor"),
    Limit("audit-since", INT64_MAX, _get("/v1/audit?since={}"), 200, "since"),
    Limit("audit-until", INT64_MAX, _get("/v1/audit?until={}"), 200, "until"),
    Limit("audit-token-id", 64, _get("/v1/audit?tokenId={}", _letters), 200, "tokenId"),
    Limit("audit-principal", MAX_PRINCIPAL_LENGTH, _get("/v1/audit?principal={}", _quoted_principal), 200, "principal"),
]


@pytest.mark.parametrize("limit", LIMITS, ids=[limit.id for limit in LIMITS])
def test_a_limit_holds_at_its_bound_and_refuses_one_past_it(edge_client: TestClient, limit: Limit) -> None:
    at_bound = limit.send(edge_client, limit.bound)
    assert at_bound.status_code == limit.ok, at_bound.text
    past = limit.send(edge_client, limit.bound + limit.step)
    assert past.status_code == 422, past.text
    body = past.json()
    assert body["error"] == "INVALID_REQUEST"
    assert body["message"]
    named = {str(part) for detail in body["details"] for part in detail["loc"]}
    assert limit.field in named or limit.field in body["message"], body  # the field, or a sentence about it


def _padded(length: int) -> bytes:
    """A valid create body of exactly ``length`` bytes (JSON allows trailing white space)."""
    body = b'{"renewers": ["User:bob"]}'
    return body + b" " * (length - len(body))


def test_the_body_limit_holds_at_its_bound_and_answers_413_one_past_it(edge_client: TestClient) -> None:
    headers = basic(ALICE) | {"content-type": "application/json"}
    assert edge_client.post("/v1/tokens", content=_padded(MAX_BODY_BYTES), headers=headers).status_code == 201
    refused = edge_client.post("/v1/tokens", content=_padded(MAX_BODY_BYTES + 1), headers=headers)
    assert refused.status_code == 413
    assert refused.json()["error"] == "PAYLOAD_TOO_LARGE"
    assert str(MAX_BODY_BYTES) in refused.json()["message"]


def test_a_streamed_body_without_length_is_counted_too(edge_client: TestClient) -> None:
    def chunks(total: int) -> Iterator[bytes]:
        body = _padded(total)
        for start in range(0, total, 4096):
            yield body[start : start + 4096]

    headers = basic(ALICE) | {"content-type": "application/json"}
    assert edge_client.post("/v1/tokens", content=chunks(MAX_BODY_BYTES), headers=headers).status_code == 201
    refused = edge_client.post("/v1/tokens", content=chunks(MAX_BODY_BYTES + 1), headers=headers)
    assert refused.status_code == 413


@pytest.mark.only_on("zookeeper", "writes an over-long ACL znode as kafka-acls.sh would")
def test_limits_bind_requests_not_what_zookeeper_already_holds(client: TestClient, raw_zk: KazooClient) -> None:
    """kafka-acls.sh knows none of kts's limits: one long ACL it wrote must not break every listing."""
    group = "g" * (MAX_RESOURCE_NAME_LENGTH + 1)
    entry = {"principal": _principal(MAX_PRINCIPAL_LENGTH + 1), "permissionType": "Allow", "operation": "Read"}
    kafka_acls_sh_writes(raw_zk, "Group", group, [entry | {"host": "h" * 100}])
    eventually(lambda: client.get("/v1/acls?resourceType=Group", headers=basic(ADMIN)).json()["acls"] != [])
    listed = client.get("/v1/acls", headers=basic(ADMIN))
    assert listed.status_code == 200
    assert [acl["resourceName"] for acl in listed.json()["acls"]] == [group]
    deleted = client.delete("/v1/acls?resourceType=Group", headers=basic(ADMIN))
    assert deleted.status_code == 200
    assert [acl["principal"] for acl in deleted.json()["deleted"]] == [entry["principal"]]


# --- the same limits in the OpenAPI document ------------------------------------------------------------


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app().openapi()


def _parameter(document: dict[str, Any], method: str, path: str, name: str) -> dict[str, Any]:
    for parameter in document["paths"][path][method]["parameters"]:
        if parameter["name"] == name:
            return _non_null(parameter["schema"])
    raise AssertionError(f"{method} {path} has no parameter {name}")


def _property(document: dict[str, Any], model: str, name: str) -> dict[str, Any]:
    return _non_null(document["components"]["schemas"][model]["properties"][name])


def _non_null(schema: dict[str, Any]) -> dict[str, Any]:
    options = [option for option in schema.get("anyOf", [schema]) if option.get("type") != "null"]
    assert len(options) == 1, schema
    return options[0]


DOCUMENTED = [
    ("CreateTokenRequest.renewers", ("property", "CreateTokenRequest", "renewers"), "maxItems", MAX_RENEWERS),
    ("CreateTokenRequest.renewers[]", ("item", "CreateTokenRequest", "renewers"), "maxLength", MAX_PRINCIPAL_LENGTH),
    ("CreateTokenRequest.owner", ("property", "CreateTokenRequest", "owner"), "maxLength", MAX_PRINCIPAL_LENGTH),
    ("CreateTokenRequest.maxLifetimeMs", ("property", "CreateTokenRequest", "maxLifetimeMs"), "format", "int64"),
    ("RenewRequest.renewTimePeriodMs", ("property", "RenewRequest", "renewTimePeriodMs"), "format", "int64"),
    ("ExpireRequest.expiryTimePeriodMs", ("property", "ExpireRequest", "expiryTimePeriodMs"), "format", "int64"),
    ("GET /v1/tokens owner", ("parameter", "get", "/v1/tokens", "owner"), "maxItems", MAX_OWNER_FILTERS),
    ("GET /v1/tokens limit", ("parameter", "get", "/v1/tokens", "limit"), "maximum", tokens.MAX_PAGE),
    ("GET /v1/tokens cursor", ("parameter", "get", "/v1/tokens", "cursor"), "maxLength", tokens.MAX_CURSOR_LENGTH),
    ("token id", ("parameter", "get", "/v1/tokens/{token_id}", "token_id"), "maxLength", 64),
    ("Acl.principal", ("property", "Acl", "principal"), "maxLength", MAX_PRINCIPAL_LENGTH),
    ("Acl.resourceName", ("property", "Acl", "resourceName"), "maxLength", MAX_RESOURCE_NAME_LENGTH),
    ("GET /v1/acls principal", ("parameter", "get", "/v1/acls", "principal"), "maxLength", MAX_PRINCIPAL_LENGTH),
    (
        "DELETE /v1/acls resourceName",
        ("parameter", "delete", "/v1/acls", "resourceName"),
        "maxLength",
        MAX_RESOURCE_NAME_LENGTH,
    ),
    ("user name", ("parameter", "put", "/v1/users/{name}/credentials", "name"), "maxLength", MAX_USER_NAME_LENGTH),
    (
        "SetCredentialRequest.password",
        ("property", "SetCredentialRequest", "password"),
        "maxLength",
        MAX_PASSWORD_LENGTH,
    ),
    ("SetCredentialRequest.iterations", ("property", "SetCredentialRequest", "iterations"), "maximum", MAX_ITERATIONS),
    ("GET /v1/audit limit", ("parameter", "get", "/v1/audit", "limit"), "maximum", audit.MAX_PAGE),
    ("GET /v1/audit cursor", ("parameter", "get", "/v1/audit", "cursor"), "maxLength", audit.MAX_CURSOR_LENGTH),
    ("GET /v1/audit since", ("parameter", "get", "/v1/audit", "since"), "maximum", INT64_MAX),
    ("GET /v1/audit until", ("parameter", "get", "/v1/audit", "until"), "maximum", INT64_MAX),
    ("GET /v1/audit tokenId", ("parameter", "get", "/v1/audit", "tokenId"), "maxLength", 64),
    ("GET /v1/audit principal", ("parameter", "get", "/v1/audit", "principal"), "maxLength", MAX_PRINCIPAL_LENGTH),
]


@pytest.mark.parametrize(("where", "keyword", "value"), [d[1:] for d in DOCUMENTED], ids=[d[0] for d in DOCUMENTED])
def test_every_limit_is_in_the_openapi_document(
    document: dict[str, Any], where: tuple[str, ...], keyword: str, value: object
) -> None:
    kind, *rest = where
    if kind == "parameter":
        schema = _parameter(document, *rest)
    elif kind == "item":
        schema = _property(document, *rest)["items"]
    else:
        schema = _property(document, *rest)
    assert schema.get(keyword) == value, schema  # exact: 9.223372036854776e+18 != 2**63 - 1


def test_every_body_operation_documents_the_413_with_the_size(document: dict[str, Any]) -> None:
    with_bodies = [
        (method, path, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    ]
    assert len(with_bodies) >= 7
    for method, path, operation in with_bodies:
        assert str(MAX_BODY_BYTES) in operation["responses"]["413"]["description"], f"{method} {path}"


def test_the_checked_in_document_has_no_float_bounds() -> None:
    """FastAPI's model turns 2**63 - 1 into 9.223372036854776e+18, which is 2**63: one past the bound."""
    from tests.api.test_openapi import SNAPSHOT

    def floats(node: object) -> Iterator[float]:
        if isinstance(node, float):
            yield node
        elif isinstance(node, dict):
            for value in node.values():
                yield from floats(value)
        elif isinstance(node, list):
            for value in node:
                yield from floats(value)

    assert [value for value in floats(json.loads(SNAPSHOT.read_text())) if value != int(value)] == []
    assert not [value for value in floats(json.loads(SNAPSHOT.read_text())) if abs(value) >= 2**53]


@pytest.mark.only_on("zookeeper", "measures the token znode a broker reads")
def test_the_largest_token_a_request_can_make_stays_far_under_what_a_broker_can_read(
    client: TestClient, raw_zk: KazooClient
) -> None:
    # Kafka stores principals URL-encoded: a 4-byte character becomes 12 bytes of the token znode. The body limit
    # bounds what a request can carry, so the widest renewers it admits still make a znode a broker can read.
    emoji = "\U0001f600"
    renewers = ["User:" + emoji * 150 + f"{index:02d}" for index in range(MAX_RENEWERS)]
    body = json.dumps({"renewers": renewers}, ensure_ascii=False).encode("utf-8")
    while len(body) > MAX_BODY_BYTES:
        renewers = [renewer[:-3] + renewer[-2:] for renewer in renewers]  # one character less each
        body = json.dumps({"renewers": renewers}, ensure_ascii=False).encode("utf-8")
    created = client.post("/v1/tokens", content=body, headers=basic(ALICE) | {"content-type": "application/json"})
    assert created.status_code == 201, created.text
    data, _ = raw_zk.get(f"/delegation_token/tokens/{created.json()['tokenId']}")
    assert len(data) < 3 * MAX_BODY_BYTES + 1000 < 1_048_575  # what a Java client reads at most
