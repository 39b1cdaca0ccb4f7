"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.deps import RuntimeDep
from app.api.errors import RETRY_AFTER_SECONDS, error_body
from app.api.runtime import Runtime
from app.api.schemas.common import ErrorBody
from app.domain.errors import KtsError

router = APIRouter(tags=["operations"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz", responses={503: {"model": ErrorBody, "description": "A dependency is not ready; the body names it"}}
)
def readyz(runtime: RuntimeDep) -> JSONResponse:
    checks = {
        "zookeeper": "ok"
        if runtime.zk.connected
        else "session not connected (reads are served from the caches; writes are refused)",
        "tokens": "ok" if runtime.token_cache.loaded else "not loaded",
        "acls": "ok" if runtime.acl_cache.loaded else "not loaded",
        "audit_database": _audit_database(runtime),
    }
    failing = [f"{name}: {state}" for name, state in checks.items() if state != "ok"]
    if failing:
        return JSONResponse(
            error_body("NOT_READY", "; ".join(failing), checks=checks),
            status_code=503,
            headers={"Retry-After": RETRY_AFTER_SECONDS},
        )
    return JSONResponse({"status": "ready", "checks": checks})


def _audit_database(runtime: Runtime) -> str:
    try:
        runtime.audit_log.ping()
    except KtsError:
        return "unreachable"
    return "ok"
