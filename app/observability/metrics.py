"""The Prometheus metrics of one app.

Each app has a registry of its own rather than prometheus_client's global one, so that several apps in one
process (the tests) never clash over metric names. Three kinds of figures:

- HTTP requests by method, route template (``/v1/tokens/{tokenId}``, never the raw path: token ids stay out
  of labels) and status, with a latency histogram; fed by the middleware in ``app/api/metrics.py``;
- actions by audit action, outcome and Kafka error code, counted as the auditor settles each event (it is
  an ``AuditObserver``), so every token create, renew, expire, describe and every denial is counted once;
- figures read from the running replica at each scrape (``RuntimeReadings``): cached tokens and ACL
  entries, the connection to the cluster, replicas and account locks; the sweeps of a backend whose replicas
  expire tokens themselves (``SweepReadings``: zeros where the cluster expires them); and one optional section
  of the backend's own (``ZooKeeperReadings``: the child lists brokers must list, app/domain/capacity.py, the
  cluster's phase in its migration to KRaft, app/domain/cluster_migration.py, and the dual-write bridge).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.domain.audit import Action, AuditEvent, Outcome
from app.version import kts_version, python_version

# The classic text format, which every Prometheus version reads (what generate_latest writes by default).
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CLUSTER_STATES = ("connected", "suspended", "lost")
# The cluster's migration to KRaft (app/domain/cluster_migration.py); kts refuses writes from "migrating" on.
CLUSTER_PHASES = ("zookeeper", "pre-migration", "migrating", "migrated", "unknown")
# The old name of kts_cluster_connection_state, still reported in ZooKeeper mode for this release only.
DEPRECATED_SESSION_STATE = "kts_zookeeper_session_state"
UNMATCHED_ROUTE = "unmatched"  # a path no route knows: its raw text stays out of the labels


@dataclass(frozen=True, slots=True)
class SweepReadings:
    """The expiry sweeps of a backend whose replicas delete expired tokens themselves (the leader sweeps). Where
    the cluster expires them (a KRaft controller), ``NO_SWEEPS``: the metrics read 0."""

    runs: Callable[[], int]
    swept: Callable[[], int]
    leads: Callable[[], bool]  # whether this replica leads the sweeps
    early_runs: Callable[[], int] = lambda: 0  # sweeps brought forward by expired tokens piling up


NO_SWEEPS = SweepReadings(runs=lambda: 0, swept=lambda: 0, leads=lambda: False)


@dataclass(frozen=True, slots=True)
class ZooKeeperReadings:
    """The ZooKeeper backend's own section of the figures."""

    # The child lists brokers must list, as ZooKeeper has them now, with the bytes left before creates and
    # renews are refused; None when ZooKeeper cannot be read.
    child_lists: Callable[[], list[ChildListFigures] | None] = lambda: None
    cluster_phase: Callable[[], str | None] = lambda: None  # one of CLUSTER_PHASES (None: not known)
    # Change notifications this replica wrote for the KRaft controller's token changes (app/storage/zk/token_bridge.py).
    bridged_notifications: Callable[[], int] = lambda: 0


@dataclass(frozen=True, slots=True)
class RuntimeReadings:
    """Where the scrape-time figures come from. Callables, so each scrape reads the current value and
    nothing is kept up to date between scrapes."""

    cached_tokens: Callable[[], int]
    acl_entries: Callable[[], int]
    cluster_state: Callable[[], str]  # one of CLUSTER_STATES
    backend: str  # how the cluster is reached, the label of kts_cluster_connection_state
    replicas: Callable[[], int] = lambda: 1  # live replicas sharing the account lockout, as this one sees them
    account_locks: Callable[[], int] = lambda: 0  # shared account locks in force, as this one sees them
    expired_tokens: Callable[[], int] = lambda: 0  # in the cache, past their expiry, not swept yet
    sweeps: SweepReadings = NO_SWEEPS
    zookeeper: ZooKeeperReadings | None = None  # the ZooKeeper backend's section


@dataclass(frozen=True, slots=True)
class ChildListFigures:
    name: str  # tokens, token_changes
    entries: int
    bytes: int
    bytes_left: int


class KtsMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._readings: RuntimeReadings | None = None
        self._http_requests = Counter(
            "kts_http_requests",
            "HTTP requests by method, route template and status code.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self._http_latency = Histogram(
            "kts_http_request_duration_seconds",
            "Time from receiving an HTTP request to the end of its response, by method and route template.",
            ["method", "route"],
            registry=self.registry,
        )
        self._actions = Counter(
            "kts_actions",
            "Actions by audit action (token.create, token.renew, token.expire, token.revoke, token.describe, "
            "token.verify, token.sweep, authentication, acl.*, credential.*), outcome (succeeded, denied, failed, "
            "pending when the outcome is unknown) and Kafka error code (empty when none).",
            ["action", "outcome", "error_code"],
            registry=self.registry,
        )
        self._action_counts: dict[tuple[Action, Outcome, int | None], Counter] = {}
        Gauge(
            "kts_build_info",
            "Always 1; the labels name the running kts version and Python version.",
            ["version", "python_version"],
            registry=self.registry,
        ).labels(version=kts_version(), python_version=python_version()).set(1)
        self.registry.register(_RuntimeCollector(lambda: self._readings))
        self.registry.register(_DeprecatedSessionState(lambda: self._readings))
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    def observe(self, event: AuditEvent) -> None:
        """``AuditObserver``: count an action as it ends. Each count's labelled child is kept (a few dozen): the
        client's ``labels`` checks and looks its labels up again at every call, which a sweep makes 100k times."""
        key = (event.action, event.outcome, event.error_code)
        child = self._action_counts.get(key)
        if child is None:
            code = "" if event.error_code is None else str(event.error_code)
            child = self._action_counts[key] = self._actions.labels(event.action.value, event.outcome.value, code)
        child.inc()

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._http_requests.labels(method, route, str(status)).inc()
        self._http_latency.labels(method, route).observe(seconds)

    def watch(self, readings: RuntimeReadings | None) -> None:
        """Read these from now on (None: the runtime has stopped, report none of its figures)."""
        self._readings = readings

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format."""
        return generate_latest(self.registry)


class _RuntimeCollector(Collector):
    def __init__(self, readings: Callable[[], RuntimeReadings | None]) -> None:
        self._readings = readings

    def collect(self) -> Iterable[Metric]:
        readings = self._readings()
        if readings is None:
            return []
        state = readings.cluster_state()
        cluster = GaugeMetricFamily(
            "kts_cluster_connection_state",
            "1 for the current state of this replica's connection to the cluster (backend: zookeeper, its "
            "session; kafka, the brokers through the Kafka protocol).",
            labels=["backend", "state"],
        )
        for name in CLUSTER_STATES:
            cluster.add_metric([readings.backend, name], 1.0 if name == state else 0.0)
        section = readings.zookeeper
        return [
            *([] if section is None else _child_list_metrics(section.child_lists())),
            *([] if section is None else _cluster_metrics(section.cluster_phase())),
            *self._replica_metrics(readings, cluster),
        ]

    @staticmethod
    def _replica_metrics(readings: RuntimeReadings, cluster: Metric) -> list[Metric]:
        sweeps, section = readings.sweeps, readings.zookeeper
        return [
            GaugeMetricFamily(
                "kts_tokens",
                "Delegation tokens in this replica's cache: live tokens, and expired ones until they are swept.",
                value=readings.cached_tokens(),
            ),
            GaugeMetricFamily("kts_acl_entries", "ACL entries in this replica's cache.", value=readings.acl_entries()),
            CounterMetricFamily("kts_sweep_runs", "Expiry sweeps this replica has run.", value=sweeps.runs()),
            CounterMetricFamily(
                "kts_sweep_early_runs",
                "Expiry sweeps this replica ran before their interval, because expired tokens piled up or a token "
                "list neared its limit.",
                value=sweeps.early_runs(),
            ),
            GaugeMetricFamily(
                "kts_expired_tokens",
                "Tokens in this replica's cache past their expiry and not swept yet.",
                value=readings.expired_tokens(),
            ),
            CounterMetricFamily(
                "kts_token_bridge_notifications",
                "Token change notifications this replica wrote during a migration's dual-write phase, for token "
                "changes the KRaft controller made without one (each also audited as token.bridge).",
                value=0 if section is None else section.bridged_notifications(),
            ),
            CounterMetricFamily(
                "kts_swept_tokens", "Expired tokens this replica's sweeps deleted.", value=sweeps.swept()
            ),
            GaugeMetricFamily(
                "kts_sweeper_leader",
                "1 while this replica leads the expiry sweeper, else 0.",
                value=1.0 if sweeps.leads() else 0.0,
            ),
            GaugeMetricFamily(
                "kts_replicas",
                "Live replicas as this one sees them (the account lockout divides its threshold among them).",
                value=readings.replicas(),
            ),
            GaugeMetricFamily(
                "kts_account_locks",
                "Account locks in force shared by every replica, as this replica sees them (past the cap a lock is "
                "kept by the replica that made it).",
                value=readings.account_locks(),
            ),
            cluster,
        ]


def _cluster_metrics(phase: str | None) -> list[Metric]:
    if phase is None:
        return []
    family = GaugeMetricFamily(
        "kts_cluster_migration_phase",
        "1 for the Kafka cluster's phase in its migration to KRaft as ZooKeeper shows it (zookeeper, pre-migration, "
        "migrating, migrated, unknown); kts refuses token, ACL and credential writes in migrating, migrated and "
        "unknown.",
        labels=["phase"],
    )
    for name in CLUSTER_PHASES:
        family.add_metric([name], 1.0 if name == phase else 0.0)
    return [family]


class _DeprecatedSessionState(Collector):
    """``kts_zookeeper_session_state{state}``, the name of ``kts_cluster_connection_state`` before the Kafka-protocol
    backend, kept in ZooKeeper mode for one more release so that dashboards and alerts on the old name keep working
    while they move (docs/operations.md#upgrades-and-migrations). Remove it in the release after."""

    def __init__(self, readings: Callable[[], RuntimeReadings | None]) -> None:
        self._readings = readings

    def collect(self) -> Iterable[Metric]:
        readings = self._readings()
        if readings is None or readings.zookeeper is None:
            return []
        state = readings.cluster_state()
        family = GaugeMetricFamily(
            DEPRECATED_SESSION_STATE,
            'Deprecated, removed in the next release: use kts_cluster_connection_state{backend="zookeeper"}. '
            "1 for the current state of this replica's ZooKeeper session.",
            labels=["state"],
        )
        for name in CLUSTER_STATES:
            family.add_metric([name], 1.0 if name == state else 0.0)
        return [family]


def _child_list_metrics(figures: list[ChildListFigures] | None) -> list[Metric]:
    if figures is None:
        return []
    entries = GaugeMetricFamily(
        "kts_zookeeper_children",
        "Children of /delegation_token/<list> in ZooKeeper (list: tokens, token_changes).",
        labels=["list"],
    )
    size = GaugeMetricFamily(
        "kts_zookeeper_children_bytes",
        "Bytes of a Java client's getChildren2 reply listing /delegation_token/<list>; brokers fail to list it "
        "at jute.maxbuffer (1048575 unless raised).",
        labels=["list"],
    )
    left = GaugeMetricFamily(
        "kts_zookeeper_children_capacity_left_bytes",
        "Bytes /delegation_token/<list> may still grow before creates and renews are refused "
        "(zookeeper.children.max.bytes minus the reserve kept for expires).",
        labels=["list"],
    )
    for figure in figures:
        entries.add_metric([figure.name], figure.entries)
        size.add_metric([figure.name], figure.bytes)
        left.add_metric([figure.name], figure.bytes_left)
    return [entries, size, left]
