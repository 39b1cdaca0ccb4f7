"""The reference tables of docs/ agree with the code: every endpoint of the OpenAPI document is described in
docs/api.md, every error the service answers with is in its table with the status it gets, every configuration
key is in docs/configuration.md with its default, and the limits quoted are the ones enforced."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import PydanticUndefined

from app.api.errors import kts_error_response
from app.api.limits import MAX_BODY_BYTES
from app.api.routers.tokens import MAX_PAGE
from app.api.schemas.common import MAX_OWNER_FILTERS, MAX_RENEWERS
from app.api.schemas.users import MAX_PASSWORD_LENGTH, MAX_USER_NAME_LENGTH
from app.auth.authorization_header import MAX_AUTHORIZATION_LENGTH, MAX_JWT_LENGTH
from app.backends import all_setting_fields, load_settings
from app.domain import errors
from app.domain.acl import MAX_RESOURCE_NAME_LENGTH
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS
from app.domain.principal import MAX_PRINCIPAL_LENGTH
from app.settings import ENV_PREFIX, ConfigError, property_key

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
OPENAPI = ROOT / "openapi" / "openapi.json"
# Served, documented, and deliberately left out of the OpenAPI document.
OUTSIDE_OPENAPI = {("GET", "/metrics"), ("GET", "/docs"), ("GET", "/openapi.json")}


def table_rows(text: str) -> list[list[str]]:
    """The cells of every table row in a Markdown text (header and rule rows included)."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|")
    ]


def _normalized(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_every_endpoint_is_described_once() -> None:
    headings = re.findall(r"^### `([A-Z]+) (/\S*)`$", API.read_text(encoding="utf-8"), flags=re.MULTILINE)
    documented = [(method, _normalized(path)) for method, path in headings]
    assert len(documented) == len(set(documented)), "an endpoint is described twice"
    served = {
        (method.upper(), _normalized(path))
        for path, operations in json.loads(OPENAPI.read_text(encoding="utf-8"))["paths"].items()
        for method in operations
    }
    assert set(documented) == served | {(method, _normalized(path)) for method, path in OUTSIDE_OPENAPI}


def _concrete_errors() -> list[errors.KtsError]:
    def subclasses(base: type[errors.KtsError]) -> list[type[errors.KtsError]]:
        found: list[type[errors.KtsError]] = []
        for kind in base.__subclasses__():
            found += [kind, *subclasses(kind)]
        return found

    made: list[errors.KtsError] = []
    for kind in subclasses(errors.KtsError):
        if kind in (errors.KafkaError,):
            continue  # abstract: only its subclasses carry a code
        made.append(kind(3) if issubclass(kind, errors.TooManyAttempts) else kind("a sentence."))
    return made


def test_every_error_is_in_the_table_with_its_status_and_code() -> None:
    documented = {
        (int(row[0]), row[1].strip("`"), row[2])
        for row in table_rows(API.read_text(encoding="utf-8"))
        if row[0].isdigit() and row[1].startswith("`")
    }
    for error in _concrete_errors():
        response = kts_error_response(error)
        body = json.loads(bytes(response.body))
        row = (response.status_code, body["error"], str(body.get("code", "")))
        assert row in documented, f"{type(error).__name__} answers {row}, which docs/api.md does not list"


def _default(name: str) -> Any:
    field = all_setting_fields()[name]
    if field.default_factory is not None:
        return "factory"
    if field.default is PydanticUndefined:
        return "required"
    return field.default


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def configuration_rows() -> dict[str, str]:
    rows = {}
    for cells in table_rows(CONFIGURATION.read_text(encoding="utf-8")):
        if len(cells) == 3 and re.fullmatch(r"`[a-z0-9.]+`", cells[0]):
            key = cells[0].strip("`")
            assert key not in rows, f"{key} is documented twice"
            rows[key] = cells[1]
    return rows


def test_every_key_is_documented_and_no_other() -> None:
    assert set(configuration_rows()) == {property_key(name) for name in all_setting_fields()}


@pytest.mark.parametrize("name", sorted(all_setting_fields()))
def test_documented_defaults_are_the_defaults(name: str) -> None:
    documented = configuration_rows()[property_key(name)]
    default = _default(name)
    literal = re.fullmatch(r"`([^`]*)`", documented)
    if literal is not None:
        assert literal.group(1) == _literal(default)
    elif documented != "*required*":
        # Words rather than a literal: no value, or one chosen at start-up (the host name, one per command).
        assert default in (None, "", "factory"), f"{property_key(name)} defaults to {default!r}"


@pytest.mark.parametrize("key", [key for key, default in configuration_rows().items() if default == "*required*"])
def test_documented_required_keys_are_required(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in [variable for variable in os.environ if variable.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(variable)
    complete = {"zookeeper_connect": "zk:2181", "delegation_token_secret_key": "a-secret"}
    load_settings(**complete)
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}: missing"):
        load_settings(**{name: value for name, value in complete.items() if property_key(name) != key})


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (f"64 KiB ({MAX_BODY_BYTES} bytes)", 64 * 1024),
        (f"| `Authorization` header | {MAX_AUTHORIZATION_LENGTH} characters |", 4096),
        (f"| a Bearer JWT | {MAX_JWT_LENGTH} characters", 8192),
        (f"The JWT is longer than {MAX_JWT_LENGTH} characters.", 8192),
        (f"| a principal (`Type:name`) | {MAX_PRINCIPAL_LENGTH} characters;", 1024),
        (f"`owner` filters of a describe | {MAX_RENEWERS} each |", MAX_OWNER_FILTERS),
        (f"| a page (`limit`) | 1 to {MAX_PAGE}, default 100 |", 1000),
        (f"| an ACL resource name | 1 to {MAX_RESOURCE_NAME_LENGTH} characters", 1040),
        (f"| a SCRAM user name | 1 to {MAX_USER_NAME_LENGTH} characters", 255),
        (f"| a password | 1 to {MAX_PASSWORD_LENGTH} characters |", 1024),
        (f"| SCRAM iterations | {MIN_ITERATIONS} to {MAX_ITERATIONS} |", MIN_ITERATIONS),
    ],
)
def test_quoted_limits_are_the_enforced_ones(text: str, value: int) -> None:
    assert text in API.read_text(encoding="utf-8")
    assert str(value) in text


def _served(routes: list[Any], prefix: str = "") -> set[tuple[str, str]]:
    """(method, path) of every route, through included routers (FastAPI 0.120+ keeps them as routers of their own,
    older versions flatten them into the app's list)."""
    from starlette.routing import Route

    served: set[tuple[str, str]] = set()
    for route in routes:
        if isinstance(route, Route):
            served |= {(method, prefix + route.path) for method in route.methods or () if method != "HEAD"}
        elif (context := getattr(route, "include_context", None)) is not None:
            served |= _served(context.included_router.routes, prefix + context.prefix)
    return served


def test_every_route_of_the_app_is_described_under_its_own_path() -> None:
    """docs/api.md's headings name each route as the app serves it, parameter names included (the OpenAPI document
    and Swagger UI show ``{token_id}``), and nothing the app does not serve."""
    from app.api.app import create_app
    from app.api.docs import ASSETS_PATH

    served = {(method, path) for method, path in _served(create_app().routes) if not path.startswith(ASSETS_PATH)}
    assert ("POST", "/v1/tokens") in served and ("GET", "/metrics") in served  # the walk reaches included routers
    headings = re.findall(r"^### `([A-Z]+) (/\S*)`$", API.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert set(headings) == served


# Pages that open with a list of their sections.
PAGES_WITH_CONTENTS = ("api.md", "architecture.md", "configuration.md", "deployment.md", "operations.md")


@pytest.mark.parametrize("name", PAGES_WITH_CONTENTS)
def test_a_pages_contents_list_every_section(name: str) -> None:
    from tests.unit.test_docs_links import slug

    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    listed = re.findall(r"^- \[[^\]]+\]\(#([^)]+)\)", text, flags=re.MULTILINE)
    sections = [slug(heading) for heading in re.findall(r"^## (.+)$", text, flags=re.MULTILINE)]
    assert listed == sections, f"docs/{name}: the contents list and the ## sections differ"
