"""Swagger UI at ``/docs``, served from installed packages only.

FastAPI's default docs page loads Swagger UI from a CDN and stays blank on an air-gapped host. The
``fastapi-offline`` package ships Swagger UI's built assets (a 5.x release, which reads the OpenAPI 3.1
documents FastAPI writes); we serve those files next to the page. The page and its assets are left out
of the OpenAPI document: they are not part of the API.

The page starts Swagger UI with ``swagger_ui.js`` (next to this module) instead of an inline script: it adds a
plugin that checks what is entered in the Authorize dialog against ``CHECK_PATH`` before Swagger UI calls it
authorized, and shows kts's refusal in the dialog otherwise (Swagger UI itself never checks).
"""

from __future__ import annotations

from html import escape
from importlib.resources import files

from fastapi import FastAPI, Request
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

_ASSET_PACKAGE = "fastapi_offline"
# Ours: starts Swagger UI and checks the Authorize dialog's credentials.
START_SCRIPT = "kts-swagger-ui.js"
# Any caller kts accepts may describe tokens, so a 2xx here means the credentials are good; a token.describe
# event is audited, as for any other call.
CHECK_PATH = "/v1/tokens?limit=1"

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link type="text/css" rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="shortcut icon" href="{assets}/favicon.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{assets}/{start}" data-openapi-url="{openapi}" data-check-url="{check}"></script>
</body>
</html>
"""


def install_docs(app: FastAPI) -> None:
    """Add ``GET /docs`` and its assets under ``/docs/static/``; needs ``docs_url=None`` on the app."""
    for name, media_type in ASSET_MEDIA_TYPES.items():
        _add_asset_route(app, name, media_type, str(files(_ASSET_PACKAGE).joinpath("static", name)))
    _add_asset_route(
        app, START_SCRIPT, ASSET_MEDIA_TYPES["swagger-ui-bundle.js"], str(files(__package__).joinpath("swagger_ui.js"))
    )

    @app.get(DOCS_PATH, include_in_schema=False)
    def swagger_ui(request: Request) -> HTMLResponse:
        # root_path keeps the links right behind a reverse proxy that serves kts under a prefix.
        root = request.scope.get("root_path", "").rstrip("/")
        return HTMLResponse(
            _PAGE.format(
                title=escape(f"{app.title} - Swagger UI"),
                assets=escape(f"{root}{ASSETS_PATH}"),
                start=START_SCRIPT,
                openapi=escape(f"{root}{app.openapi_url}"),
                check=escape(f"{root}{CHECK_PATH}"),
            )
        )


def _add_asset_route(app: FastAPI, name: str, media_type: str, path: str) -> None:
    @app.get(f"{ASSETS_PATH}/{name}", include_in_schema=False, name=f"docs-asset-{name}")
    def asset() -> FileResponse:
        return FileResponse(path, media_type=media_type)
