"""Liveness and readiness, for anyone (probes, load balancers): no detail of the cluster."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.deps import ReadinessView
from app.api.error_body import RETRY_AFTER_SECONDS, error_body
from app.api.schemas.ops import NotReadyBody, ReadyBody
from app.service.readiness import readiness_report
from app.version import kts_version

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive; ``version`` is the installed kts version."""
    return {"status": "ok", "version": kts_version()}


@router.get(
    "/readyz",
    response_model=ReadyBody,
    responses={503: {"model": NotReadyBody, "description": "A dependency is not ready; `reason` names it"}},
)
def readyz(readiness: ReadinessView) -> JSONResponse:
    """Ready (200) when every dependency is, else 503. Needs no login, so it says only a status and a reason word:
    a cluster that refuses kts's writes leaves the replica ready for reads (``status`` is then ``read-only``). The
    details (backend, each check, the cluster's id, controller and migration) are ``GET /v1/cluster/status``'s."""
    report = readiness_report(readiness)
    if not report.ready:
        return JSONResponse(
            error_body("NOT_READY", f"Not ready: {report.reason}.", status=report.status, reason=report.reason),
            status_code=503,
            headers={"Retry-After": RETRY_AFTER_SECONDS},
        )
    return JSONResponse({"status": report.status, "reason": report.reason})
