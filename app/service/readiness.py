"""Whether this replica can serve: the state of each dependency, and what each audience is told of it.

Built by the composition root over plain probes, so whoever asks sees states, never the connections or
caches behind them. ``/readyz`` answers anyone (probes, load balancers): only a status and a reason word
(``ReadinessReport.status`` and ``.reason``). The details (the backend, each check's words, the cluster's id,
controller and migration offsets) are for callers with ``Describe`` on the cluster (``ClusterStatus``:
``GET /v1/cluster/status``, ``kts cluster status``), since they tell a stranger how the cluster is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from app.domain.authorization import Authorizer, Caller, Operation, ensure_cluster_permission
from app.domain.cluster_facts import ClusterFacts
from app.domain.cluster_migration import ClusterState
from app.domain.errors import KtsError
from app.service.audit import AuditLog

OK = "ok"
READY, READ_ONLY, NOT_READY = "ready", "read-only", "not-ready"


@dataclass(frozen=True, slots=True)
class Readiness:
    cluster_connected: Callable[[], bool]
    tokens_loaded: Callable[[], bool]
    acls_loaded: Callable[[], bool]
    audit_log: AuditLog
    backend: str  # how the cluster is reached (the backend's name: zookeeper, kafka, memory)
    # The cluster's mode, id, brokers or ensemble, version and kts's principal, for ClusterStatus only.
    facts: Callable[[], ClusterFacts] | None = None
    # The backend's own section, where it has one. Not a check: a cluster migrating to KRaft refuses writes for
    # good, yet reads go on, so the replica stays ready and /readyz says what it sees (the ZooKeeper backend:
    # app/storage/zk/cluster_watch.py), and the live tokens kts could not renew after a switch to the Kafka
    # protocol (app/storage/zk/migration_prep.py).
    cluster: Callable[[], ClusterState] | None = None
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


class ReadinessChecks(Protocol):
    """``Readiness``, or a stand-in while the replica starts (app/api/deps.py)."""

    @property
    def backend(self) -> str | None: ...

    @property
    def cluster(self) -> Callable[[], ClusterState] | None: ...

    @property
    def facts(self) -> Callable[[], ClusterFacts] | None: ...

    @property
    def unrenewable(self) -> Callable[[], int] | None: ...

    def checks(self) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class ReadinessReport:
    status: str  # ready, read-only (the cluster refuses kts's writes) or not-ready
    reason: str  # one word: ok, the first failing check's name, or the migration phase that refuses writes
    backend: str | None
    checks: dict[str, str]
    facts: ClusterFacts | None = None  # ClusterStatus only: what the cluster is (never for /readyz)
    # The backend's section (ZooKeeper: the cluster and its migration to KRaft as ZooKeeper shows it, and the live
    # tokens kts could not renew after a switch; None: kts's principal there is not configured).
    cluster: ClusterState | None = None
    unrenewable: int | None = None

    @property
    def ready(self) -> bool:
        return self.status != NOT_READY

    @property
    def failing(self) -> list[str]:
        """``name: words`` of each failing check."""
        return [f"{name}: {value}" for name, value in self.checks.items() if value != OK]


def readiness_report(readiness: ReadinessChecks) -> ReadinessReport:
    checks = readiness.checks()
    probe = readiness.cluster
    state = probe() if probe is not None else None
    failing = [name for name, value in checks.items() if value != OK]
    if failing:
        status, reason = NOT_READY, failing[0]
    elif state is not None and not state.writes_allowed:
        status, reason = READ_ONLY, state.phase.value
    else:
        status, reason = READY, OK
    return ReadinessReport(status, reason, readiness.backend, checks, cluster=state)


class ClusterStatus:
    """The replica's full report, for callers with ``Describe`` on the cluster (the audit trail's rule)."""

    def __init__(self, readiness: ReadinessChecks, *, authorizer: Authorizer) -> None:
        self._readiness = readiness
        self._authorizer = authorizer

    def report(self, caller: Caller) -> ReadinessReport:
        ensure_cluster_permission(self._authorizer, caller, Operation.DESCRIBE, to="read the cluster's status")
        report = readiness_report(self._readiness)
        count = self._readiness.unrenewable  # a walk over every token: for this report only, never for /readyz
        if count is not None:
            report = replace(report, unrenewable=count())
        probe = self._readiness.facts
        if probe is None:
            return report
        try:
            facts = probe()
        except KtsError as exc:  # the cluster cannot be asked right now: say so among the checks
            return replace(report, checks={**report.checks, "cluster_facts": exc.message})
        return replace(report, facts=facts)
