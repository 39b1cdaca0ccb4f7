"""The checked-in OpenAPI document is what the app serves (regenerate with ``make openapi``)."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app

SNAPSHOT = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_checked_in_openapi_matches_the_app() -> None:
    assert json.loads(SNAPSHOT.read_text()) == create_app().openapi(), "run `make openapi` and review the diff"


def test_served_openapi_matches_the_snapshot(edge_client: TestClient) -> None:
    assert edge_client.get("/openapi.json").json() == json.loads(SNAPSHOT.read_text())


def test_every_v1_operation_documents_its_errors_with_the_envelope() -> None:
    document = create_app().openapi()
    for path, operations in document["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            errors = {code for code in operation["responses"] if code.startswith(("4", "5"))}
            assert {"401", "422", "503"} <= errors, f"{method} {path}"
            for code in errors:
                schema = operation["responses"][code]["content"]["application/json"]["schema"]
                assert schema["$ref"].endswith("/ErrorBody"), f"{method} {path} {code}"
