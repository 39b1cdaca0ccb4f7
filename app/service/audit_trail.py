"""Reading the audit trail: who may, and the query."""

from __future__ import annotations

from app.domain.audit import EventQuery, StoredEvent
from app.domain.authorization import CLUSTER_RESOURCE_NAME, Authorizer, Caller, Operation, ResourceType
from app.domain.errors import ClusterAuthorizationFailed
from app.service.audit import AuditLog


class AuditTrail:
    def __init__(self, log: AuditLog, *, authorizer: Authorizer) -> None:
        self._log = log
        self._authorizer = authorizer

    def events(self, caller: Caller, query: EventQuery) -> list[StoredEvent]:
        if not self._authorizer.authorize(caller, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME):
            raise ClusterAuthorizationFailed(
                f"{caller.principal} may not read the audit trail (needs Describe on Cluster:{CLUSTER_RESOURCE_NAME})."
            )
        return self._log.query(query)
