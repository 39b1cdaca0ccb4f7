"""The app of the management listener (``http.management.listeners``): ``/healthz``, ``/readyz`` and ``/metrics``
of the replica the main app runs, and nothing else.

It shares the main app's state (the runtime its lifespan attaches, the metrics registry), so both listeners
report on one replica; it has no lifespan of its own. Its requests are not counted in the HTTP metrics, which
describe the API's traffic, not the probes' and scrapes'.
"""

from __future__ import annotations

from fastapi import FastAPI

from app.api.errors import install_error_handlers
from app.api.metrics import router as metrics_router
from app.api.routers import ops
from app.api.routers.mounting import mount
from app.api.security_headers import SecurityHeaders

MANAGEMENT_PATHS = ("/healthz", "/readyz", "/metrics")


def create_management_app(main: FastAPI) -> FastAPI:
    app = FastAPI(title="kts management", openapi_url=None, docs_url=None, redoc_url=None)
    app.state = main.state
    install_error_handlers(app)
    app.add_middleware(SecurityHeaders)
    mount(app, ops.router, metrics_router)
    return app
