"""``create_app``: the FastAPI application. Building it does no I/O; connecting happens in the lifespan."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI

from app.api.deps import SERVICES_STATE
from app.api.docs import install_docs
from app.api.errors import install_error_handlers
from app.api.json_bodies import JsonBodiesOnly
from app.api.limits import BodySizeLimit
from app.api.metrics import MetricsMiddleware
from app.api.metrics import router as metrics_router
from app.api.request_context import RequestContextMiddleware
from app.api.routers import acls, audit, cluster, ops, tokens, users
from app.api.routers.mounting import mount
from app.api.security_headers import SecurityHeaders
from app.api.security_schemes import install_security_schemes
from app.backend_selection import BackendFactory
from app.backends import load_settings
from app.domain.clock import Clock
from app.observability.metrics import KtsMetrics
from app.runtime import EarlyStart, build_runtime
from app.service.audit import AuditLog
from app.settings import Settings

CONFIG_ENV = "KTS_CONFIG"


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    audit_log: AuditLog | None = None,
    backend_factory: BackendFactory | None = None,
    early: EarlyStart | None = None,
) -> FastAPI:
    """The app. Without ``settings`` they are loaded at start-up from ``$KTS_CONFIG`` and ``KTS_*``.
    ``audit_log`` replaces the database-backed audit log (benchmarks only); ``backend_factory`` the backend the
    settings select (the in-memory backend of the fast tests). With ``early`` (``kts serve``), the runtime is the
    one already starting there (app/runtime.py), and the lifespan waits for its start."""
    # A registry of this app's own: several apps in one process never clash.
    metrics = KtsMetrics() if early is None else early.metrics

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if early is not None:
            # The worker threads' pool started (anyio imports its event loop backend on first use) while the runtime
            # loads, which leaves a core idle as it waits for ZooKeeper's answers: the first request served in a
            # thread, a starting replica's first readiness probe, would otherwise start it after the load.
            await anyio.to_thread.run_sync(_nothing)
            runtime = await early.started()
        else:
            effective = settings
            if effective is None:
                config = os.environ.get(CONFIG_ENV)
                effective = load_settings(Path(config) if config else None)
            runtime = build_runtime(
                effective, clock, audit_log, audit_observer=metrics, backend_factory=backend_factory
            )
            await anyio.to_thread.run_sync(runtime.start)
        setattr(app.state, SERVICES_STATE, runtime)
        metrics.watch(runtime.readings())
        try:
            yield
        finally:
            metrics.watch(None)
            await anyio.to_thread.run_sync(runtime.stop)

    app = FastAPI(
        title="kts",
        summary="A token authority for Apache Kafka: delegation tokens over HTTP, byte-compatible with brokers.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # replaced by install_docs: served from the package, not a CDN
        redoc_url=None,
    )
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit)
    app.add_middleware(JsonBodiesOnly)  # CSRF: refused before any body is read
    app.add_middleware(RequestContextMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(SecurityHeaders)  # outermost: also on responses other middleware make (413)
    app.state.metrics = metrics
    mount(app, tokens.router, acls.router, users.router, audit.router, cluster.router, ops.router, metrics_router)
    install_security_schemes(app)
    install_docs(app)
    return app


def _nothing() -> None:
    return None
