"""Who may scrape ``/metrics``: anyone by default (as usual for Prometheus), or, with
``metrics.auth.required``, only callers with ``Describe`` on the cluster, the audit trail's rule."""

from __future__ import annotations

from app.domain.authorization import Authorizer, Caller, Operation, ensure_cluster_permission


class MetricsAccess:
    def __init__(self, *, auth_required: bool, authorizer: Authorizer) -> None:
        self._auth_required = auth_required
        self._authorizer = authorizer

    @property
    def auth_required(self) -> bool:
        return self._auth_required

    def ensure_may_scrape(self, caller: Caller) -> None:
        ensure_cluster_permission(self._authorizer, caller, Operation.DESCRIBE, to="read the metrics")
