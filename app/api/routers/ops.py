"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.deps import ReadinessView
from app.api.errors import RETRY_AFTER_SECONDS, error_body
from app.api.schemas.common import ErrorBody
from app.service.readiness import OK
from app.version import kts_version

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive; ``version`` is the installed kts version."""
    return {"status": "ok", "version": kts_version()}


@router.get(
    "/readyz", responses={503: {"model": ErrorBody, "description": "A dependency is not ready; the body names it"}}
)
def readyz(readiness: ReadinessView) -> JSONResponse:
    checks = readiness.checks()
    failing = [f"{name}: {state}" for name, state in checks.items() if state != OK]
    if failing:
        return JSONResponse(
            error_body("NOT_READY", "; ".join(failing), checks=checks, backend=readiness.backend),
            status_code=503,
            headers={"Retry-After": RETRY_AFTER_SECONDS},
        )
    return JSONResponse({"status": "ready", "backend": readiness.backend, "checks": checks})
