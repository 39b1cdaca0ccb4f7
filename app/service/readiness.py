"""Whether this replica can serve: the state of each dependency, as ``/readyz`` reports it.

Built by the composition root over plain probes, so whoever asks sees states, never the connections or
caches behind them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.domain.cluster_migration import ClusterState
from app.domain.errors import KtsError
from app.service.audit import AuditLog

OK = "ok"


@dataclass(frozen=True, slots=True)
class Readiness:
    cluster_connected: Callable[[], bool]
    tokens_loaded: Callable[[], bool]
    acls_loaded: Callable[[], bool]
    audit_log: AuditLog
    backend: str = "zookeeper"  # how the cluster is reached: zookeeper or kafka (its protocol)
    # Not a check: a cluster migrating to KRaft refuses writes for good, yet reads go on, so the replica stays
    # ready and /readyz says what it sees (ZooKeeper backend only: app/storage/zk/cluster_watch.py).
    cluster: Callable[[], ClusterState] | None = None
    # With ZooKeeper: live tokens kts could not renew after a switch (app/service/migration_prep.py)
    unrenewable: Callable[[], int] | None = None

    def checks(self) -> dict[str, str]:
        """Each dependency's state: ``ok`` or a few words saying what is wrong."""
        return {
            "cluster": OK
            if self.cluster_connected()
            else f"{self.backend} connection lost (reads are served from the caches; writes are refused)",
            "tokens": OK if self.tokens_loaded() else "not loaded",
            "acls": OK if self.acls_loaded() else "not loaded",
            "audit_database": self._audit_database(),
        }

    def _audit_database(self) -> str:
        try:
            self.audit_log.ping()
        except KtsError:
            return "unreachable"
        return OK
