"""The Kafka-protocol backend, assembled (``KafkaBackend``, app/service/backend.py's ``ClusterBackend``): kts reaches
the brokers of ``bootstrap.servers`` with the ``admin.*`` login. The controller expires tokens itself: no sweeper,
no capacity guard (no ZooKeeper child lists). What replicas share in ZooKeeper mode (intent markers, quota turns,
account locks, the leader) they share in the audit database here (app/storage/sql/;
docs/operations.md#replicas-without-zookeeper), and the leader settles the audit trail with the cluster.

Imported only when the settings select this backend: the Kafka-protocol client (kio, kafka-python) takes a good part
of a second to import, which a replica of the ZooKeeper backend would pay at every start for nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

from sqlalchemy import Engine

from app.domain.authorization import Authorizer
from app.domain.clock import Clock
from app.domain.principal import KafkaPrincipal
from app.domain.token_secret import TokenSecret
from app.observability.metrics import RuntimeReadings
from app.service.audit import AuditLog, Auditor, AuditReconciler, IntentStore
from app.service.backend import OPEN_ADMISSION, Bound, Duty, LeaderWork, OwnLogin, Reconciler
from app.service.cluster_audit import ClusterAuditReconciler
from app.service.ports import IntentMarks, LockoutStore, QuotaGuard, TokenRequesters
from app.service.readiness import Readiness
from app.storage.audit.requesters import NoTokenRequesters
from app.storage.audit.sink import SqlAuditLog
from app.storage.kafka.acls import KafkaAclCache, KafkaAcls, KafkaAclStore
from app.storage.kafka.client_config import KafkaClientSecurity
from app.storage.kafka.cluster import KafkaCluster
from app.storage.kafka.token_cache import KafkaTokenCache
from app.storage.kafka.token_store import KafkaTokenStore
from app.storage.kafka.users import BrokerCredentials, KafkaUserStore
from app.storage.memory.intents import MemoryIntentStore
from app.storage.memory.lockout_store import MemoryLockoutStore
from app.storage.memory.quota_guard import MemoryQuotaGuard
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.leadership import DbLeadership
from app.storage.sql.lockout_store import SqlLockoutStore
from app.storage.sql.quota_guard import SqlQuotaGuard
from app.storage.sql.replicas import ReplicaRegistry
from app.storage.sql.token_requesters import SqlTokenRequesters

log = logging.getLogger(__name__)
T = TypeVar("T")

# The leader of this mode's chores (the controller expires tokens: there is no sweeper to elect).
LEADERSHIP = "kts-leader"
DAY_MS = 86_400_000


class KafkaSettings(Protocol):
    """The settings this backend reads (app/settings.py's ``Settings`` has them all)."""

    @property
    def bootstrap_servers(self) -> str | None: ...
    @property
    def kafka_security(self) -> KafkaClientSecurity: ...
    @property
    def admin_request_timeout_ms(self) -> int: ...
    @property
    def cluster_cache_refresh_ms(self) -> int: ...
    @property
    def delegation_token_expiry_time_ms(self) -> int: ...
    @property
    def delegation_token_max_lifetime_ms(self) -> int: ...
    @property
    def service_id(self) -> str: ...
    @property
    def secret_key(self) -> str: ...


class _IntentMarkStore(IntentMarks, IntentStore, Protocol):
    """What the Kafka-protocol stores mark and the auditor clears."""


class _SharedLockoutStore(LockoutStore, Protocol):
    def in_force(self) -> int: ...


def kafka_cluster(settings: KafkaSettings) -> KafkaCluster:
    """The brokers of ``bootstrap.servers``, reached with the ``admin.*`` login."""
    assert settings.bootstrap_servers is not None
    return KafkaCluster(
        settings.bootstrap_servers, settings.kafka_security, request_timeout_ms=settings.admin_request_timeout_ms
    )


class KafkaBackend:
    """The parts of one replica that reach the cluster through the Kafka protocol. ``database``: the audit database
    the replicas share (the audit log itself); None (an audit log that is no database: benchmarks) keeps what they
    would share in this process, for one replica, with no leader."""

    name = "kafka"

    def __init__(
        self,
        settings: KafkaSettings,
        clock: Clock,
        audit_log: AuditLog,
        secret: TokenSecret,
        database: SqlAuditLog | None,
    ) -> None:
        self.secret = secret
        self.cluster = cluster = kafka_cluster(settings)
        self.intents: _IntentMarkStore
        requesters: TokenRequesters
        quota_guard: QuotaGuard
        self._lockout: _SharedLockoutStore
        self.reconciler: Reconciler
        self._steps: list[tuple[Callable[[], None], Callable[[], None]]]  # start and stop, in start's order
        self._leadership: Callable[[Duty], DbLeadership] | None = None
        if database is None:
            log.warning("the audit log is not a database: intents, quota turns and account locks are this process's")
            self.intents = MemoryIntentStore()
            requesters, quota_guard, self._lockout = NoTokenRequesters(), MemoryQuotaGuard(), MemoryLockoutStore(clock)
            reconciler = AuditReconciler(audit_log, self.intents, clock=clock, service_id=settings.service_id)
            self.reconciler, self._duties = reconciler, []
            self._steps = [(reconciler.start, reconciler.stop)]
        else:
            engine = database.engine
            if engine.dialect.name == "sqlite":
                log.info("audit.db.url is SQLite: one replica only (several replicas share a PostgreSQL database)")
            registry = ReplicaRegistry(engine, service_id=settings.service_id)
            self.intents = SqlIntentMarks(engine, clock=clock)
            requesters = SqlTokenRequesters(engine, database, service_id=settings.service_id)
            # A create's RPC may land until the Kafka client gives up on it, and a little after.
            quota_guard = SqlQuotaGuard(engine, in_flight_ms=max(30_000, 2 * settings.admin_request_timeout_ms))
            lockout = SqlLockoutStore(engine, service_id=settings.service_id, replicas=registry.replicas, clock=clock)
            self._lockout = lockout
            settler = ClusterAuditReconciler(
                audit_log,
                requesters,
                cluster,
                self.intents,
                clock=clock,
                own_principal=lambda: cluster.principal,
                default_renew_ms=settings.delegation_token_expiry_time_ms,
                forget_after_ms=settings.delegation_token_max_lifetime_ms + DAY_MS,
            )
            self.reconciler, self._duties = settler, [("audit-reconciler", settler.run)]
            self._steps = [(registry.start, registry.stop), (lockout.start, lockout.stop)]
            self._leadership = lambda duty: DbLeadership(engine, LEADERSHIP, registry.instance_id, duty)
        self.lockout_store: LockoutStore = self._lockout
        acl_rpc = KafkaAcls(cluster.wire)
        self.acl_view = self._acl_cache = KafkaAclCache(acl_rpc, interval_ms=settings.cluster_cache_refresh_ms)
        self.acl_store = KafkaAclStore(acl_rpc, self._acl_cache, self.intents)
        self.token_view = self._token_cache = KafkaTokenCache(
            cluster, secret, requesters, interval_ms=settings.cluster_cache_refresh_ms
        )
        self.token_store = KafkaTokenStore(
            cluster, self._token_cache, secret, quota_guard=quota_guard, intents=self.intents, requesters=requesters
        )
        self.user_store = KafkaUserStore(cluster.wire, self.intents)
        self.credentials = BrokerCredentials(cluster.wire, self.user_store)
        login = settings.kafka_security.login
        self.own_login = OwnLogin(
            () if login is None else (KafkaPrincipal.user(login.username),),
            source="its login to the brokers, admin.sasl.jaas.config",
            learned=lambda: cluster.known_principal,
            scram_user=login.username if login is not None and login.mechanism.startswith("SCRAM-") else None,
        )
        self.renewers_added: tuple[KafkaPrincipal, ...] = ()  # the controller makes kts's principal a renewer
        self.readiness = Readiness(
            cluster_connected=lambda: cluster.connected,
            tokens_loaded=lambda: self._token_cache.loaded,
            acls_loaded=lambda: self._acl_cache.loaded,
            audit_log=audit_log,
            backend=self.name,
            facts=cluster.facts,
        )

    def bind(self, auditor: Auditor, authorizer: Authorizer) -> Bound:
        """No limits beyond the token rules and the quotas; the leader settles the audit trail with the cluster."""
        return Bound(OPEN_ADMISSION, LeaderWork(self._duties, self._leadership))

    def connect(self) -> None:
        self.cluster.start(self.secret)  # checks the secret by minting a one-minute token for kts and comparing HMACs

    def start(self) -> None:
        self._acl_cache.start()
        self._token_cache.start()
        for start, _ in self._steps:
            start()

    def stop(self) -> None:
        for _, stop in reversed(self._steps):
            stop()
        self._token_cache.stop()
        self._acl_cache.stop()
        self.cluster.stop()

    def readings(self) -> RuntimeReadings:
        return RuntimeReadings(
            cached_tokens=lambda: len(self._token_cache),
            acl_entries=lambda: len(self._acl_cache.snapshot()),
            sweep_runs=lambda: 0,
            swept_tokens=lambda: 0,
            leads_sweeper=lambda: False,
            cluster_state=lambda: self.cluster.state,
            backend=self.name,
            replicas=self._lockout.replicas,
            account_locks=self._lockout.in_force,
        )

    @staticmethod
    def check(settings: KafkaSettings) -> None:
        """Connect once before serving: an unreachable cluster, a rejected login, a cluster without delegation tokens
        (StoreUnavailable) or a secret key other than the cluster's (SecretKeyMismatch) is one line from the CLI."""
        cluster = kafka_cluster(settings)
        cluster.start(TokenSecret(settings.secret_key))
        cluster.stop()

    @staticmethod
    def with_lockout_store(
        settings: KafkaSettings, database: Engine, clock: Clock, use: Callable[[SqlLockoutStore], T]
    ) -> T:
        """``use`` the account locks the replicas share in the audit database (``kts lockout``); the brokers are not
        needed."""
        return use(SqlLockoutStore(database, service_id=settings.service_id, replicas=lambda: 1, clock=clock))
