"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.deps import ReadinessView
from app.api.errors import RETRY_AFTER_SECONDS, error_body
from app.api.schemas.ops import NotReadyBody, ReadyBody, migration_json
from app.service.readiness import OK
from app.version import kts_version

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is alive; ``version`` is the installed kts version."""
    return {"status": "ok", "version": kts_version()}


@router.get(
    "/readyz",
    response_model=ReadyBody,
    responses={503: {"model": NotReadyBody, "description": "A dependency is not ready; the body names it"}},
)
def readyz(readiness: ReadinessView) -> JSONResponse:
    """Ready when every dependency is. ``backend`` says how kts reaches the Kafka cluster; with ZooKeeper,
    ``migration`` says where the cluster stands in its migration to KRaft. A cluster that refuses kts's writes leaves
    the replica ready for reads (``status`` is then ``read-only``)."""
    checks = readiness.checks()
    probe = readiness.cluster
    state = probe() if probe is not None else None
    extra: dict[str, Any] = {"backend": readiness.backend, "checks": checks}
    if state is not None:
        unrenewable = readiness.unrenewable() if readiness.unrenewable is not None else None
        extra["migration"] = migration_json(state, unrenewable).model_dump()
    failing = [f"{name}: {value}" for name, value in checks.items() if value != OK]
    if failing:
        return JSONResponse(
            error_body("NOT_READY", "; ".join(failing), **extra),
            status_code=503,
            headers={"Retry-After": RETRY_AFTER_SECONDS},
        )
    status = "ready" if state is None or state.writes_allowed else "read-only"
    return JSONResponse({"status": status, **extra})
