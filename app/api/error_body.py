"""What every error answer of kts holds (``{"error": NAME, "message": ...}``) and how soon a refused client may try
again: shared by the API's error mapping (app/api/errors.py) and the HTTP protocol's own refusals
(app/cli/server/uvicorn_h11.py), which must not import FastAPI: ``kts serve`` imports the protocol before the
HTTP layer, while its runtime starts (app/runtime.py's EarlyStart)."""

from __future__ import annotations

from typing import Any

RETRY_AFTER_SECONDS = "2"


def error_body(name: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": name, "message": message, **extra}
