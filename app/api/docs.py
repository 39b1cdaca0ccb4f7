"""Swagger UI at ``/docs``, served from installed packages only.

FastAPI's default docs page loads Swagger UI from a CDN and stays blank on an air-gapped host. The
``fastapi-offline`` package ships Swagger UI's built assets (a 5.x release, which reads the OpenAPI 3.1
documents FastAPI writes); we serve those files next to the page. The page and its assets are left out
of the OpenAPI document: they are not part of the API.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

DOCS_PATH = "/docs"
ASSETS_PATH = f"{DOCS_PATH}/static"

# Explicit media types, because guessing from the host's mime tables may serve JavaScript as text/plain,
# which browsers refuse to run.
ASSET_MEDIA_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}

SWAGGER_UI_PARAMETERS: dict[str, Any] = {
    # Never keep what was entered in the Authorize dialog: Swagger UI would write the password or bearer
    # token to the browser's local storage, readable by any script of this origin and left on shared machines.
    "persistAuthorization": False,
    # No badge fetched from the public Swagger validator: deployments may have no way out.
    "validatorUrl": None,
}

_ASSET_PACKAGE = "fastapi_offline"


def install_docs(app: FastAPI) -> None:
    """Add ``GET /docs`` and its assets under ``/docs/static/``; needs ``docs_url=None`` on the app."""
    for name, media_type in ASSET_MEDIA_TYPES.items():
        _add_asset_route(app, name, media_type)

    @app.get(DOCS_PATH, include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        # root_path keeps the links right behind a reverse proxy that serves kts under a prefix.
        root = request.scope.get("root_path", "").rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
            oauth2_redirect_url=None,
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )


def _add_asset_route(app: FastAPI, name: str, media_type: str) -> None:
    path = str(files(_ASSET_PACKAGE).joinpath("static", name))

    @app.get(f"{ASSETS_PATH}/{name}", include_in_schema=False, name=f"docs-asset-{name}")
    def asset() -> FileResponse:
        return FileResponse(path, media_type=media_type)
