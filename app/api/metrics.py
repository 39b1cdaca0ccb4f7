"""``GET /metrics`` (Prometheus text format) and the middleware that times every request. The readings of
the running replica taken at each scrape come from the composition root (``Runtime.readings``)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.deps import ServicesDep, authenticate_request
from app.api.http_middleware import HttpMiddleware
from app.observability.metrics import EXPOSITION_CONTENT_TYPE, UNMATCHED_ROUTE, KtsMetrics

router = APIRouter()
# Any other method is labelled "other": label values must come from a small, fixed set.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, services: ServicesDep) -> Response:
    """Prometheus scrape endpoint. By default no authentication, as usual for metrics: it shows counts and
    states, never a token id, principal, HMAC or secret. ``metrics.auth.required`` asks for a caller with
    ``Describe`` on the cluster (401 or 403 otherwise)."""
    access = services.metrics_access
    if access.auth_required:
        access.ensure_may_scrape(authenticate_request(request, services))
    registry: KtsMetrics = request.app.state.metrics
    return Response(registry.exposition(), media_type=EXPOSITION_CONTENT_TYPE)


class MetricsMiddleware(HttpMiddleware):
    """Counts and times every HTTP request by its route template, once routing has named it."""

    def __init__(self, app: ASGIApp, metrics: KtsMetrics) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500  # unless a response starts: an exception escaping the app becomes a 500

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noting_status)
        finally:
            # The router records the matched route in the (shared) scope; its path is the template.
            route = getattr(scope.get("route"), "path", None) or UNMATCHED_ROUTE
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.metrics.observe_request(method, route, status, time.perf_counter() - started)
