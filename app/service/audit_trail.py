"""Reading the audit trail: who may, and the query."""

from __future__ import annotations

from app.domain.audit import EventQuery, StoredEvent
from app.domain.authorization import Authorizer, Caller, Operation, ensure_cluster_permission
from app.service.audit import AuditLog


class AuditTrail:
    def __init__(self, log: AuditLog, *, authorizer: Authorizer) -> None:
        self._log = log
        self._authorizer = authorizer

    def events(self, caller: Caller, query: EventQuery) -> list[StoredEvent]:
        ensure_cluster_permission(self._authorizer, caller, Operation.DESCRIBE, to="read the audit trail")
        return self._log.query(query)
