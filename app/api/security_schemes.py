"""The authentication schemes the OpenAPI document declares (so Swagger UI offers them), written into it directly.

FastAPI learns a scheme from a dependency whose callable is a ``SecurityBase`` (its own ``HTTPBasic`` would also answer
malformed headers itself, outside kts's error envelope and challenge); but it solves every dependency on every
request, and these two read nothing of it (the ``Authorization`` header is parsed once, by Authenticator): the two
were some 50 µs of CPU on each authenticated request. So each operation of an ``AuthenticatedRoute`` carries
the requirement in its ``openapi_extra``, and ``install_security_schemes`` adds the schemes to the document's
components: the document is the one the dependencies made (tests/api/test_openapi.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

SCHEMES: dict[str, dict[str, str]] = {
    "httpBasic": {"type": "http", "scheme": "basic", "description": "A SCRAM user's name and password."},
    "httpBearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "`tokenId:hmac` of a delegation token (the HMAC in base64), or a workload JWT.",
    },
}


def with_security(openapi_extra: dict[str, Any] | None) -> dict[str, Any]:
    """An operation's ``openapi_extra`` with the requirement that its caller authenticates by any scheme."""
    return {"security": [{name: []} for name in SCHEMES]} | (openapi_extra or {})


def install_security_schemes(app: FastAPI) -> None:
    """The schemes in the components of the document ``app`` serves (built once, as FastAPI caches it)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()
            schemes = document.setdefault("components", {}).setdefault("securitySchemes", {})
            schemes.update({name: dict(scheme) for name, scheme in SCHEMES.items()})
        return app.openapi_schema or build()

    app.openapi = openapi  # type: ignore[method-assign]
