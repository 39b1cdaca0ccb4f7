"""``GET /docs`` works air-gapped: the page names only local assets, and the app serves them itself.

The docs need no ZooKeeper, so these tests talk to an app whose lifespan never runs."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib.resources import files

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.api.docs import ASSETS_PATH

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon.png": "image/png",
}
START_SCRIPT = "kts-swagger-ui.js"


class _LinkCollector(HTMLParser):
    """Every URL the page makes the browser load: ``src`` and ``href`` attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href") and value is not None]


def _loaded_urls(html: str) -> list[str]:
    collector = _LinkCollector()
    collector.feed(html)
    return collector.urls


@pytest.fixture
def docs_client() -> TestClient:
    return TestClient(create_app())


def test_docs_page_loads_only_local_assets(docs_client: TestClient) -> None:
    response = docs_client.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert sorted(_loaded_urls(response.text)) == sorted(f"{ASSETS_PATH}/{name}" for name in [*ASSETS, START_SCRIPT])
    assert re.search(r"https?://", response.text) is None
    assert 'data-openapi-url="/openapi.json"' in response.text
    assert 'data-check-url="/v1/tokens?limit=1"' in response.text
    assert "<script>" not in response.text  # no inline script: the page's policy allows this origin's files only


def test_docs_page_does_not_persist_authorization_and_has_no_oauth2_redirect(docs_client: TestClient) -> None:
    script = docs_client.get(f"{ASSETS_PATH}/{START_SCRIPT}")
    assert script.headers["content-type"].split(";")[0] == "text/javascript"
    assert "persistAuthorization: false" in script.text
    assert "oauth2RedirectUrl" not in script.text + docs_client.get("/docs").text
    assert docs_client.get("/docs/oauth2-redirect").status_code == 404
    assert docs_client.get("/redoc").status_code == 404


@pytest.mark.parametrize(("name", "media_type"), ASSETS.items())
def test_assets_are_served_from_the_package_with_their_media_type(
    docs_client: TestClient, name: str, media_type: str
) -> None:
    response = docs_client.get(f"{ASSETS_PATH}/{name}")
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == media_type
    assert response.content == files("fastapi_offline").joinpath("static", name).read_bytes()


def test_unknown_asset_is_a_404_with_the_error_envelope(docs_client: TestClient) -> None:
    response = docs_client.get(f"{ASSETS_PATH}/swagger-ui.js")
    assert response.status_code == 404
    assert response.json()["error"] == "NOT_FOUND"


def test_links_follow_the_root_path_behind_a_proxy() -> None:
    html = TestClient(create_app(), root_path="/kts").get("/docs").text
    assert all(url.startswith(f"/kts{ASSETS_PATH}/") for url in _loaded_urls(html))
    assert 'data-openapi-url="/kts/openapi.json"' in html
    assert 'data-check-url="/kts/v1/tokens?limit=1"' in html


def test_openapi_json_is_still_served(docs_client: TestClient) -> None:
    assert docs_client.get("/openapi.json").json() == create_app().openapi()


def test_docs_routes_stay_out_of_the_schema() -> None:
    assert not [path for path in create_app().openapi()["paths"] if path.startswith("/docs")]


def test_authorize_dialog_offers_basic_and_bearer() -> None:
    document = create_app().openapi()
    schemes = document["components"]["securitySchemes"]
    assert {name: (scheme["type"], scheme["scheme"]) for name, scheme in schemes.items()} == {
        "httpBasic": ("http", "basic"),
        "httpBearer": ("http", "bearer"),
    }
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if path.startswith("/v1/"):
                # Two alternatives (either scheme suffices), not one requirement naming both.
                assert operation["security"] == [{"httpBasic": []}, {"httpBearer": []}], f"{method} {path}"
