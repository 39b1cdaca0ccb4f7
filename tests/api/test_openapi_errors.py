"""Every API operation documents its error responses with the error envelope (issue 7, item 2).

Operations probes call (``/healthz``, ``/readyz``, ``/metrics``) answer in their own formats and are left out."""

from __future__ import annotations

from typing import Any

import pytest

from app.main import create_app

ENVELOPE_REF = "#/components/schemas/ErrorBody"
PROBES = {"/healthz", "/readyz", "/metrics"}
ALWAYS_DOCUMENTED = {"401", "422", "503"}
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    document = create_app().openapi()
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        if path not in PROBES
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_the_envelope_schema_has_error_and_message() -> None:
    envelope = create_app().openapi()["components"]["schemas"]["ErrorBody"]
    assert {"error", "message"} <= set(envelope["required"])


def test_there_are_operations_to_check() -> None:
    assert len(_operations()) > 10


@pytest.mark.parametrize(
    ("method", "path", "operation"), [pytest.param(*entry, id=f"{entry[0]} {entry[1]}") for entry in _operations()]
)
def test_operation_documents_401_422_503_with_the_envelope(method: str, path: str, operation: dict[str, Any]) -> None:
    responses = operation["responses"]
    missing = ALWAYS_DOCUMENTED - set(responses)
    assert not missing, f"{method} {path} does not document {sorted(missing)}"
    for status in sorted(code for code in responses if code.startswith(("4", "5"))):
        schema = responses[status].get("content", {}).get("application/json", {}).get("schema", {})
        assert schema.get("$ref") == ENVELOPE_REF, f"{method} {path} {status} is not the error envelope"
