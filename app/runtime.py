"""The composition root: builds every adapter and use case from settings; the only module that knows every
concrete class. The API (``create_app``'s lifespan) and the server commands use it; the HTTP layer then sees
only the services and views it exposes (``app/api/deps.py``). Nothing here runs at import."""

from __future__ import annotations

import gc
import logging
import secrets
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from sqlalchemy import Engine

from app.auth.authenticator import Authenticator
from app.auth.basic import BasicAuthenticator, StoredKeyCredentials
from app.auth.own_identity import OwnIdentity, ScramUsers, shared_identity_warnings
from app.domain.acl import AclAuthorizer
from app.domain.audit import Action
from app.domain.capacity import CapacityPolicy, Purpose, with_notifications_to_come
from app.domain.clock import Clock, SystemClock
from app.domain.cluster_facts import ClusterFacts
from app.domain.errors import KtsError, StoreUnavailable
from app.domain.lockout import AccountLockout, LockoutPolicy
from app.domain.principal import KafkaPrincipal
from app.domain.secret_fingerprint import SALT_BYTES, check_same_secret
from app.domain.ssl_principal_mapper import SslPrincipalMapper
from app.domain.sweep_schedule import SweepSchedule
from app.domain.throttle import FailureThrottle, ThrottlePolicy
from app.domain.token_quota import TokenQuota
from app.domain.token_rules import TokenPolicy
from app.domain.token_secret import TokenSecret
from app.domain.token_share import SharePolicy
from app.leader.duties import Duty, side_by_side
from app.leader.sweeper import Sweeper
from app.observability.metrics import ChildListFigures, RuntimeReadings
from app.service.acls import AclService
from app.service.attempts import AttemptGuard
from app.service.audit import AuditLog, AuditObserver, Auditor, AuditReconciler
from app.service.audit_retention import AuditRetention
from app.service.audit_trail import AuditTrail
from app.service.break_glass import BreakGlass
from app.service.capacity import CapacityGuard
from app.service.cluster_audit import ClusterAuditReconciler
from app.service.lockout import AccountLocks
from app.service.metrics_access import MetricsAccess
from app.service.migration_prep import MigrationPreparation, unrenewable
from app.service.ports import AclView, IntentMarks, LockoutStore, QuotaGuard, TokenRequesters
from app.service.readiness import ClusterStatus, Readiness
from app.service.revocation import TokenRevocation
from app.service.token_bridge import TokenBridge
from app.service.token_shares import TokenShares
from app.service.tokens import TokenService
from app.service.users import UserCredentialService
from app.settings import Settings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine
from app.storage.audit.requesters import NoTokenRequesters
from app.storage.audit.sink import SqlAuditLog
from app.storage.memory.intents import MemoryIntentStore
from app.storage.memory.lockout_store import MemoryLockoutStore
from app.storage.memory.quota_guard import MemoryQuotaGuard
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.leadership import DbLeadership
from app.storage.sql.lockout_store import SqlLockoutStore
from app.storage.sql.quota_guard import SqlQuotaGuard
from app.storage.sql.replicas import ReplicaRegistry
from app.storage.sql.token_requesters import SqlTokenRequesters
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.child_lists import ZkChildLists
from app.storage.zk.cluster_watch import ClusterWatch
from app.storage.zk.connection import ZkConnection
from app.storage.zk.credential_cache import CredentialCache
from app.storage.zk.election import Leadership
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.lockout_store import ZkLockoutStore
from app.storage.zk.notification_purger import NotificationPurger
from app.storage.zk.secret_fingerprint_store import ZkSecretFingerprintStore
from app.storage.zk.token_cache import TokenCache
from app.storage.zk.token_changes import ZkTokenChanges
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import AclChangeZNode, KtsZNodes, TokenChangeZNode

if TYPE_CHECKING:
    from app.auth.workload_jwt import JwtAuthenticator
    from app.storage.kafka.cluster import KafkaCluster

log = logging.getLogger(__name__)
T = TypeVar("T")
UNREACHED = 2**31  # a throttle limit no client reaches


@dataclass
class Runtime:
    """What one replica runs, whichever backend reaches the cluster (``settings.backend``): the services the
    API sees, and the steps that start and stop the connections, caches and background duties behind them."""

    settings: Settings
    backend: str  # zookeeper, or kafka (the Kafka protocol)
    audit_log: AuditLog
    tokens: TokenService
    revocation: TokenRevocation
    users: UserCredentialService
    acls: AclService
    audit_trail: AuditTrail
    metrics_access: MetricsAccess
    reconciler: AuditReconciler | ClusterAuditReconciler
    authenticator: Authenticator
    attempt_guards: list[AttemptGuard]
    readiness: Readiness
    cluster_status: ClusterStatus
    cluster_connected: Callable[[], bool]
    startup: list[Callable[[], None]]  # in order, once the audit database is ready
    shutdown: list[Callable[[], None]]  # in order
    readings_of: Callable[[], RuntimeReadings]

    def readings(self) -> RuntimeReadings:
        """What the metrics read at each scrape."""
        return self.readings_of()

    def start(self) -> None:
        if isinstance(self.audit_log, SqlAuditLog):
            self.audit_log.migrate(auto=self.settings.audit_db_auto_migrate)
            log.info(
                "audit database %s at schema %s", describe_url(self.settings.audit_db_url), migrations.HEAD_REVISION
            )
        with _loaded_for_good():
            for step in self.startup:
                step()

    def stop(self) -> None:
        for guard in self.attempt_guards:  # bursts still open are audited, not lost with the process
            guard.flush()
        for step in self.shutdown:
            step()


@contextmanager
def _loaded_for_good() -> Iterator[None]:
    """What start-up loads (every token, every ACL) lives as long as the replica, in objects the cyclic garbage
    collector would otherwise walk again and again: several full collections while 100k tokens load (a third of
    the load's time), then one every so often while serving, each pausing every request for hundreds of ms at
    100k tokens. So the collector pauses while start-up runs, and what it loaded is then frozen (``gc.freeze``:
    never scanned again; freed as usual when no longer referenced, say a token swept). Garbage left by earlier
    work is collected first, so that freezing keeps none of it (tests start many replicas in one process), unless
    the collector was paused already: kts serve pauses it from its first import (app/cli/server/commands.py), and
    all it would find then is some 700 objects the imports dropped, for a walk of every object the imports made
    (0.1 s of start-up)."""
    if gc.isenabled():
        gc.collect()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        gc.enable()


@contextmanager
def _reloaded_for_good() -> Iterator[None]:
    """``_loaded_for_good`` around the token cache's loads: its first, inside start-up's own (which freezes at its
    end), and those after a lost session while serving, which would otherwise leave 100k tokens to be walked by
    every full collection from then on."""
    if not gc.isenabled():  # start-up's, or the one kts serve holds from its first import (app/cli/server/commands.py)
        yield
        return
    with _loaded_for_good():
        yield


def _first_reading(capacity: CapacityGuard) -> None:
    """One reading at start: the capacity guard warns if a child list is already past 80%."""
    _child_list_figures(capacity)


def _child_list_figures(capacity: CapacityGuard) -> list[ChildListFigures] | None:
    try:
        readings = capacity.read()
    except KtsError:
        return None
    limit = capacity.policy.limit(Purpose.ISSUE)
    counted = with_notifications_to_come(readings)
    return [
        ChildListFigures(child_list.value, reading.entries, reading.bytes, max(0, limit - counted[child_list].bytes))
        for child_list, reading in readings.items()
    ]


def zk_connection(settings: Settings) -> ZkConnection:
    """The ZooKeeper session of these settings: address, timeouts, login, TLS, znode ACL policy, and whether a
    Kafka cluster must already live there."""
    return ZkConnection(
        settings.zookeeper_connect_string,
        session_timeout_ms=settings.zookeeper_session_timeout_ms,
        connection_timeout_ms=settings.zookeeper_connection_timeout_ms,
        security=settings.zookeeper_security,
        require_cluster=settings.zookeeper_cluster_required,
    )


def attempt_guard(
    settings: Settings, auditor: Auditor, clock: Clock, action: Action, lockout: AccountLocks | None = None
) -> AttemptGuard | None:
    """The guard of one kind of attempt under the ``auth.failures.*`` settings and, for logins, the lockout;
    None when both are turned off."""
    if settings.auth_failures_max == 0 and lockout is None:
        return None
    if settings.auth_failures_max == 0:
        # The lockout alone: a throttle whose limits are never reached still groups the audit records of a
        # locked account's refused attempts into bursts.
        policy = ThrottlePolicy(
            max_failures=UNREACHED,
            address_max_failures=UNREACHED,
            window_ms=settings.auth_failures_window_ms,
            max_keys=settings.auth_throttle_max_keys,
            counted_subjects=(),
        )
    else:
        policy = ThrottlePolicy(
            max_failures=settings.auth_failures_max,
            address_max_failures=settings.auth_failures_address_max,
            window_ms=settings.auth_failures_window_ms,
            max_keys=settings.auth_throttle_max_keys,
        )
    return AttemptGuard(FailureThrottle(policy, clock), auditor, action, lockout=lockout)


def account_locks(
    settings: Settings, store: LockoutStore, auditor: Auditor, authorizer: AclAuthorizer, clock: Clock
) -> AccountLocks:
    policy = LockoutPolicy(
        threshold=max(1, settings.auth_lockout_threshold),  # 0 (off): built for unlocking what is left only
        window_ms=settings.auth_lockout_window_ms,
        duration_ms=settings.auth_lockout_duration_ms,
        max_keys=settings.auth_throttle_max_keys,
    )
    return AccountLocks(
        AccountLockout(policy, clock),
        store,
        auditor=auditor,
        authorizer=authorizer,
        exempt=settings.lockout_exempt_addresses,
    )


def leader_duties(
    settings: Settings,
    sweeper: Sweeper,
    purger: NotificationPurger,
    locks: AccountLocks,
    audit_log: AuditLog,
    clock: Clock,
    bridge: TokenBridge | None = None,
) -> Duty:
    """What the elected leader does, side by side: sweep expired tokens, purge old notifications, delete ended
    account locks, during a migration's dual-write bridge the KRaft controller's token changes to the brokers still
    in ZooKeeper mode and, with ``audit.retention.days``, delete old audit events."""
    interval_ms = settings.auth_lockout_cleanup_interval_ms
    duties: list[tuple[str, Duty]] = [
        ("sweeper", sweeper.run),
        ("notification-purger", purger.run),
        *([("token-bridge", bridge.run)] if bridge is not None else []),
        ("lockout-cleaner", lambda lost: locks.run_cleanup(lost, interval_ms)),
    ]
    if settings.audit_retention_days is not None:
        retention = AuditRetention(audit_log, clock, days=settings.audit_retention_days)
        duties.append(("audit-retention", retention.run))
    return side_by_side(duties)


def jwt_authenticator(settings: Settings, clock: Clock) -> JwtAuthenticator | None:
    """The workload JWT check of the ``sasl.oauthbearer.*`` settings; None without a JWKS endpoint URL."""
    url = settings.sasl_oauthbearer_jwks_endpoint_url
    if url is None:
        return None
    # Imported only here: PyJWT and cryptography's key types cost a replica without JWTs start-up time for nothing.
    from app.auth.jwks import JwksKeys, fetcher
    from app.auth.workload_jwt import JwtAuthenticator, JwtPolicy

    cafile = settings.sasl_oauthbearer_jwks_endpoint_cafile
    context = ssl.create_default_context(cafile=str(cafile)) if cafile is not None else None
    if not settings.jwt_audiences:
        log.warning(
            "sasl.oauthbearer.expected.audience is not set: kts accepts JWTs meant for any service of the issuer"
        )
    refresh_ms = settings.sasl_oauthbearer_jwks_endpoint_refresh_ms
    keys = JwksKeys(url, fetcher(url, context), refresh_ms=refresh_ms, clock=clock)
    policy = JwtPolicy(
        issuer=settings.sasl_oauthbearer_expected_issuer or None,
        audiences=settings.jwt_audiences,
        sub_claim=settings.sasl_oauthbearer_sub_claim_name,
        clock_skew_s=settings.sasl_oauthbearer_clock_skew_seconds,
        principal_prefix=settings.sasl_oauthbearer_principal_prefix,
        max_lifetime_s=settings.sasl_oauthbearer_max_lifetime_seconds,
    )
    return JwtAuthenticator(keys, policy)


def own_identity(settings: Settings, learned: Callable[[], KafkaPrincipal | None] = lambda: None) -> OwnIdentity:
    """The principals kts itself is to the cluster, which no HTTP caller may be (app/auth/own_identity.py): its
    ``admin.sasl.jaas.config`` user and the principal the brokers answered (``learned``) through the Kafka
    protocol; its SASL login to ZooKeeper with ZooKeeper."""
    if settings.backend == "kafka":
        login = settings.kafka_security.login
        configured = [] if login is None else [KafkaPrincipal.user(login.username)]
        return OwnIdentity(configured, learned, source="its login to the brokers, admin.sasl.jaas.config")
    zk_login = settings.zookeeper_security.login
    configured = [] if zk_login is None else [KafkaPrincipal.user(zk_login.username)]
    return OwnIdentity(configured, learned, source="its SASL login to ZooKeeper")


def warn_shared_identity(settings: Settings, identity: OwnIdentity, users: ScramUsers) -> None:
    """The start-up warning when kts's own principal is also a login someone may present to kts."""
    login = settings.kafka_security.login if settings.backend == "kafka" else None
    own_scram = login.username if login is not None and login.mechanism.startswith("SCRAM-") else None
    for warning in shared_identity_warnings(identity, settings.super_user_principals, users, own_scram_login=own_scram):
        log.warning(warning)


def check_cluster(settings: Settings) -> None:
    """Connect once before serving, so an unreachable cluster, a rejected login, a cluster without delegation
    tokens (StoreUnavailable) or a secret key other than the cluster's (SecretKeyMismatch) is one line from the
    CLI rather than a start-up traceback in the log."""
    if settings.backend == "kafka":
        cluster = kafka_cluster(settings)
        cluster.start(TokenSecret(settings.secret_key))
        cluster.stop()
        return
    zk = zk_connection(settings)
    zk.check(then=lambda: ensure_cluster_secret(zk, TokenSecret(settings.secret_key)))


check_zookeeper = check_cluster  # the name kts dev and older callers use


def kafka_cluster(settings: Settings) -> KafkaCluster:
    """The brokers of ``bootstrap.servers``, reached with the ``admin.*`` login."""
    from app.storage.kafka.cluster import KafkaCluster  # see _kafka_runtime

    assert settings.bootstrap_servers is not None
    return KafkaCluster(
        settings.bootstrap_servers, settings.kafka_security, request_timeout_ms=settings.admin_request_timeout_ms
    )


def zookeeper_facts(settings: Settings, cluster_id: str | None, identity: OwnIdentity) -> ClusterFacts:
    """What ``kts cluster status`` tells of a cluster kts reaches through ZooKeeper: the ensemble of
    ``zookeeper.connect`` (its chroot apart) and the principal of kts's SASL login to ZooKeeper, if any."""
    assert settings.zookeeper_connect is not None
    hosts, _, _chroot = settings.zookeeper_connect.partition("/")
    principals = sorted(str(principal) for principal in identity.principals())
    return ClusterFacts(
        mode="zookeeper",
        cluster_id=cluster_id,
        nodes=tuple(host.strip() for host in hosts.split(",") if host.strip()),
        metadata_version=None,
        principal=", ".join(principals) or None,
        secret_check="matches the fingerprint the cluster keeps (checked at start)",  # noqa: S106 - a result
    )


def ensure_cluster_secret(zk: ZkConnection, secret: TokenSecret) -> None:
    """Refuse (SecretKeyMismatch) a secret other than the one whose fingerprint the cluster keeps; record it
    when the cluster keeps none yet (docs/configuration.md#a-brokers-serverproperties)."""
    store = ZkSecretFingerprintStore(zk)
    if check_same_secret(store.record, secret, lambda: secrets.token_bytes(SALT_BYTES), store.PATH):
        log.info("recorded the fingerprint of delegation.token.secret.key at %s", store.PATH)


def build_runtime(
    settings: Settings,
    clock: Clock | None = None,
    audit_log: AuditLog | None = None,
    *,
    audit_observer: AuditObserver | None = None,
) -> Runtime:
    """``audit_log`` replaces the database-backed log (benchmarks measure auditing against a no-op sink);
    ``audit_observer`` is told how each action ended (the metrics). The backend is the settings': ZooKeeper
    wherever ``zookeeper.connect`` is set, else the Kafka protocol to ``bootstrap.servers``."""
    clock = clock or SystemClock()
    if audit_log is None:
        audit_log = SqlAuditLog(make_engine(settings.audit_db_url), service_id=settings.service_id, clock=clock)
    if settings.backend == "kafka":
        return _kafka_runtime(settings, clock, audit_log, audit_observer)
    return _zookeeper_runtime(settings, clock, audit_log, audit_observer)


@contextmanager
def _command_audit_database(settings: Settings, clock: Clock) -> Iterator[tuple[Engine, SqlAuditLog]]:
    """The audit database for one server-side command (``kts lockout``, ``kts cluster prepare-migration``): its
    schema checked, never migrated (that is ``kts serve``'s to do), disposed of after."""
    engine = make_engine(settings.audit_db_url)
    try:
        try:
            migrations.ensure_schema(engine, auto_migrate=False)
        except StoreUnavailable as exc:
            raise StoreUnavailable(f"audit.db.url: cannot reach {describe_url(settings.audit_db_url)}") from exc
        yield engine, SqlAuditLog(engine, service_id=settings.service_id, clock=clock)
    finally:
        engine.dispose()


def with_break_glass(settings: Settings, use: Callable[[BreakGlass], T], clock: Clock | None = None) -> T:
    """``use`` the operators' way in (``kts lockout``): the store the replicas share their account locks in
    (ZooKeeper; through the Kafka protocol, the audit database) and the audit database, connected for this call
    and closed after. The brokers are not needed: the locks of either backend are not theirs. As ``kts serve``'s
    start-up check, one ZooKeeper session within ``zookeeper.connection.timeout.ms``, kazoo's own retry warnings
    held back: a problem is the one line of the StoreUnavailable raised."""
    clock = clock or SystemClock()
    with _command_audit_database(settings, clock) as (engine, audit_log):
        duration_ms = settings.auth_lockout_duration_ms
        if settings.backend == "kafka":
            store = SqlLockoutStore(engine, service_id=settings.service_id, replicas=lambda: 1, clock=clock)
            return use(BreakGlass(store, store, audit_log, duration_ms=duration_ms, clock=clock))
        zk = zk_connection(settings)
        results: list[T] = []

        def connected() -> None:
            zk_store = ZkLockoutStore(zk, service_id=settings.service_id, clock=clock)
            zk_store.start()
            results.append(use(BreakGlass(zk_store, zk_store, audit_log, duration_ms=duration_ms, clock=clock)))

        zk.check(then=connected)
        return results[0]


def with_cluster_writes(settings: Settings, use: Callable[[MigrationPreparation], T], clock: Clock | None = None) -> T:
    """``use`` kts's token writes in ZooKeeper mode from a command (``kts cluster prepare-migration``), connected for
    this call and closed after: the same store, write fence, intent markers and audit database as ``kts serve``, so
    each change carries its notification, is audited, and is refused once a KRaft controller has claimed the cluster
    (ClusterMigrating)."""
    clock = clock or SystemClock()
    with _command_audit_database(settings, clock) as (_, audit_log):
        zk = zk_connection(settings)
        results: list[T] = []

        def connected() -> None:
            cluster = ClusterWatch(zk)
            state = cluster.refresh()
            if not state.writes_allowed:
                raise state.refusal()
            zk.write_fence = cluster
            store = ZkTokenStore(zk, znode_version=settings.token_znode_version)
            auditor = Auditor(audit_log, ZkIntentStore(zk))
            results.append(use(MigrationPreparation(store, auditor=auditor, clock=clock)))

        zk.check(then=connected)
        return results[0]


def _unrenewable(settings: Settings, view: TokenCache, clock: Clock) -> Callable[[], int] | None:
    """How many live tokens kts's principal on bootstrap.servers could not renew (None: that principal is unknown,
    or ``admin.sasl.jaas.config`` names none, which prepare-migration reports)."""
    try:
        principal = settings.kafka_login_principal
    except ValueError:
        principal = None
    principal = principal or next(iter(settings.added_renewers), None)
    if principal is None:
        return None
    known = principal
    return lambda: unrenewable(view, known, clock.now_ms())


def _policy(settings: Settings, *, added_renewers: bool = False) -> TokenPolicy:
    """``added_renewers``: name ``token.renewers.add`` renewers of every token created (ZooKeeper mode)."""
    return TokenPolicy(
        max_lifetime_ms=settings.delegation_token_max_lifetime_ms,
        default_renew_ms=settings.delegation_token_expiry_time_ms,
        create_for_super_users=settings.token_create_for_super_users,
        added_renewers=settings.added_renewers if added_renewers else (),
    )


def _quota(settings: Settings) -> TokenQuota:
    return TokenQuota(
        per_owner=settings.token_quota_per_owner,
        per_requester=settings.token_quota_per_requester,
        exempt_super_users=settings.token_quota_exempt_super_users,
    )


def _authorizer(settings: Settings, view: AclView) -> AclAuthorizer:
    return AclAuthorizer(
        settings.super_user_principals,
        view.snapshot,
        allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
    )


class _IntentMarkStore(IntentMarks, Protocol):
    """What the Kafka-protocol stores mark and the auditor clears (``IntentMarks`` and ``IntentStore``)."""

    def path(self, event_id: int) -> str: ...

    def existing(self, event_ids: list[int]) -> set[int]: ...

    def clear(self, event_id: int) -> None: ...

    def clear_many(self, event_ids: list[int]) -> None: ...

    def list(self) -> list[int]: ...


class _SharedLockoutStore(LockoutStore, Protocol):
    def start(self) -> None: ...

    def in_force(self) -> int: ...


@dataclass
class _Shared:
    """What replicas share without ZooKeeper, and the steps that start and stop it."""

    intents: _IntentMarkStore
    requesters: TokenRequesters
    quota_guard: QuotaGuard
    lockout_store: _SharedLockoutStore
    reconciler: AuditReconciler | ClusterAuditReconciler
    startup: list[Callable[[], None]]  # once the cluster has answered who kts is
    shutdown: list[Callable[[], None]]  # before the cluster connection closes
    # The leadership that runs these duties, contending once started; None: this process alone (no database).
    leadership_of: Callable[[Duty], DbLeadership] | None = None


# The leader of this mode's chores (the controller expires tokens: there is no sweeper to elect).
LEADERSHIP = "kts-leader"
DAY_MS = 86_400_000


def _shared_in_database(settings: Settings, clock: Clock, audit_log: AuditLog, cluster: KafkaCluster) -> _Shared:
    """Intent marks, who asked for each token, quota turns, account locks, live replicas and the leader, in the
    audit database every replica shares (app/storage/sql/; docs/operations.md#replicas-without-zookeeper). An
    audit log that is not a database (benchmarks) keeps them in this process, for one replica."""
    if not isinstance(audit_log, SqlAuditLog):
        log.warning("the audit log is not a database: intents, quota turns and account locks are this process's")
        intents = MemoryIntentStore()
        reconciler = AuditReconciler(audit_log, intents, clock=clock, service_id=settings.service_id)
        return _Shared(
            intents,
            NoTokenRequesters(),
            MemoryQuotaGuard(),
            MemoryLockoutStore(clock),
            reconciler,
            startup=[reconciler.start],
            shutdown=[reconciler.stop],
        )
    engine = audit_log.engine
    if engine.dialect.name == "sqlite":
        log.info("audit.db.url is SQLite: one replica only (several replicas share a PostgreSQL database)")
    registry = ReplicaRegistry(engine, service_id=settings.service_id)
    marks = SqlIntentMarks(engine, clock=clock)
    requesters = SqlTokenRequesters(engine, audit_log, service_id=settings.service_id)
    lockout_store = SqlLockoutStore(engine, service_id=settings.service_id, replicas=registry.replicas, clock=clock)
    settler = ClusterAuditReconciler(
        audit_log,
        requesters,
        cluster,
        marks,
        clock=clock,
        own_principal=lambda: cluster.principal,
        default_renew_ms=settings.delegation_token_expiry_time_ms,
        forget_after_ms=settings.delegation_token_max_lifetime_ms + DAY_MS,
    )
    return _Shared(
        marks,
        requesters,
        # A create's RPC may land until the Kafka client gives up on it, and a little after.
        SqlQuotaGuard(engine, in_flight_ms=max(30_000, 2 * settings.admin_request_timeout_ms)),
        lockout_store,
        settler,
        startup=[registry.start, lockout_store.start],
        shutdown=[lockout_store.stop, registry.stop],
        leadership_of=lambda duties: DbLeadership(engine, LEADERSHIP, registry.instance_id, duties),
    )


def kafka_leader_duties(
    settings: Settings, reconciler: ClusterAuditReconciler, locks: AccountLocks, audit_log: AuditLog, clock: Clock
) -> Duty:
    """What the leader does through the Kafka protocol, side by side: settle the audit trail with the cluster,
    delete ended account locks and, with ``audit.retention.days``, old audit events."""
    interval_ms = settings.auth_lockout_cleanup_interval_ms
    duties: list[tuple[str, Duty]] = [
        ("audit-reconciler", reconciler.run),
        ("lockout-cleaner", lambda lost: locks.run_cleanup(lost, interval_ms)),
    ]
    if settings.audit_retention_days is not None:
        retention = AuditRetention(audit_log, clock, days=settings.audit_retention_days)
        duties.append(("audit-retention", retention.run))
    return side_by_side(duties)


def _kafka_runtime(
    settings: Settings, clock: Clock, audit_log: AuditLog, audit_observer: AuditObserver | None
) -> Runtime:
    """Through the Kafka protocol. The controller expires tokens itself: no sweeper, no capacity guard (no
    ZooKeeper child lists). What replicas share in ZooKeeper mode (intent markers, quota guards, account locks,
    the leader) they share in the audit database here."""
    # Imported here, not at the top: the Kafka-protocol client (kio, kafka-python) takes a good part of a second
    # to import, which a replica of the ZooKeeper backend would pay at every start for nothing.
    from app.storage.kafka.acls import KafkaAclCache, KafkaAcls, KafkaAclStore
    from app.storage.kafka.token_cache import KafkaTokenCache
    from app.storage.kafka.token_store import KafkaTokenStore
    from app.storage.kafka.users import BrokerCredentials, KafkaUserStore

    secret = TokenSecret(settings.secret_key)
    cluster = kafka_cluster(settings)
    shared = _shared_in_database(settings, clock, audit_log, cluster)
    intents = shared.intents
    auditor = Auditor(audit_log, intents, observer=audit_observer)
    acl_rpc = KafkaAcls(cluster.wire)
    acl_cache = KafkaAclCache(acl_rpc, interval_ms=settings.cluster_cache_refresh_ms)
    acl_store = KafkaAclStore(acl_rpc, acl_cache, intents)
    authorizer = _authorizer(settings, acl_cache)
    token_cache = KafkaTokenCache(cluster, secret, shared.requesters, interval_ms=settings.cluster_cache_refresh_ms)
    token_store = KafkaTokenStore(
        cluster, token_cache, secret, quota_guard=shared.quota_guard, intents=intents, requesters=shared.requesters
    )
    user_store = KafkaUserStore(cluster.wire, intents)
    identity = own_identity(settings, lambda: cluster.known_principal)
    lockout_store = shared.lockout_store
    locks = account_locks(settings, lockout_store, auditor, authorizer, clock)
    verify_guard = attempt_guard(settings, auditor, clock, Action.TOKEN_VERIFY)
    login_guard = attempt_guard(
        settings, auditor, clock, Action.AUTHENTICATION, locks if settings.auth_lockout_threshold else None
    )
    tokens = TokenService(
        token_store,
        token_cache,
        secret=secret,
        policy=_policy(settings),
        authorizer=authorizer,
        clock=clock,
        auditor=auditor,
        verify_guard=verify_guard,
        quota=_quota(settings),
        own_principal=identity.is_own,
    )
    revocation = TokenRevocation(token_store, token_cache, authorizer=authorizer, auditor=auditor)
    readiness = Readiness(
        cluster_connected=lambda: cluster.connected,
        tokens_loaded=lambda: token_cache.loaded,
        acls_loaded=lambda: acl_cache.loaded,
        audit_log=audit_log,
        backend="kafka",
        facts=cluster.facts,
    )
    startup, shutdown = list(shared.startup), list(shared.shutdown)
    leadership = None
    if shared.leadership_of is not None and isinstance(shared.reconciler, ClusterAuditReconciler):
        leadership = shared.leadership_of(kafka_leader_duties(settings, shared.reconciler, locks, audit_log, clock))
        startup.append(leadership.start)
        shutdown.insert(0, leadership.stop)
    return Runtime(
        settings=settings,
        backend="kafka",
        audit_log=audit_log,
        tokens=tokens,
        revocation=revocation,
        users=UserCredentialService(
            user_store,
            authorizer=authorizer,
            auditor=auditor,
            revocation=revocation if settings.token_revoke_on_credential_delete else None,
            locks=locks,
        ),
        acls=AclService(
            acl_store,
            acl_cache,
            authorizer=authorizer,
            auditor=auditor,
            super_users=settings.super_user_principals,
            tokens_for_super_users=settings.token_create_for_super_users,
            revocation=revocation if settings.token_revoke_on_acl_delete else None,
        ),
        audit_trail=AuditTrail(audit_log, authorizer=authorizer),
        metrics_access=MetricsAccess(auth_required=settings.metrics_auth_required, authorizer=authorizer),
        reconciler=shared.reconciler,
        authenticator=Authenticator(
            BasicAuthenticator(BrokerCredentials(cluster.wire, user_store), clock),
            tokens,
            client_auth=settings.ssl_client_auth,
            mapper=SslPrincipalMapper.from_rules(settings.ssl_principal_mapping_rules),
            auditor=auditor,
            guard=login_guard,
            jwt=jwt_authenticator(settings, clock),
            own=identity,
        ),
        attempt_guards=[guard for guard in (verify_guard, login_guard) if guard is not None],
        readiness=readiness,
        cluster_status=ClusterStatus(readiness, authorizer=authorizer),
        cluster_connected=lambda: cluster.connected,
        startup=[
            lambda: cluster.start(secret),
            lambda: warn_shared_identity(settings, identity, user_store),
            acl_cache.start,
            token_cache.start,
            *startup,
        ],
        shutdown=[*shutdown, token_cache.stop, acl_cache.stop, cluster.stop],
        readings_of=lambda: RuntimeReadings(
            cached_tokens=lambda: len(token_cache),
            acl_entries=lambda: len(acl_cache.snapshot()),
            sweep_runs=lambda: 0,
            swept_tokens=lambda: 0,
            leads_sweeper=lambda: False,
            cluster_state=lambda: cluster.state,
            backend="kafka",
            replicas=lockout_store.replicas,
            account_locks=lockout_store.in_force,
        ),
    )


def _zookeeper_runtime(
    settings: Settings, clock: Clock, audit_log: AuditLog, audit_observer: AuditObserver | None
) -> Runtime:
    """Through ZooKeeper, written as a broker writes it, while the cluster's controller is a ZooKeeper broker."""
    zk = zk_connection(settings)
    cluster = ClusterWatch(zk)
    zk.write_fence = cluster  # every token, ACL and credential write checks the cluster's controller
    intents = ZkIntentStore(zk)
    auditor = Auditor(audit_log, intents, observer=audit_observer)
    acl_store = ZkAclStore(zk)
    acl_cache = AclCache(zk, acl_store)
    authorizer = _authorizer(settings, acl_cache)
    user_store = ZkUserStore(zk)
    identity = own_identity(settings)
    credentials = CredentialCache(zk, user_store)  # what Basic logins check passwords against
    secret = TokenSecret(settings.secret_key)
    token_store = ZkTokenStore(zk, znode_version=settings.token_znode_version)
    token_cache = TokenCache(zk, token_store, secret, while_reloading=_reloaded_for_good)
    capacity_policy = CapacityPolicy(settings.zookeeper_children_max_bytes)
    capacity = CapacityGuard(
        ZkChildLists(zk),
        capacity_policy,
        clock=clock,
        next_expiry_ms=lambda: min((stored.token.expiry_timestamp for stored in token_cache.tokens()), default=None),
    )
    shares = TokenShares(
        SharePolicy.of(settings.zookeeper_children_max_bytes, settings.token_write_share_ratio),
        token_cache,
        clock=clock,
        authorizer=authorizer,
    )
    purger = NotificationPurger(
        zk,
        [TokenChangeZNode.ROOT, AclChangeZNode.LITERAL_ROOT, AclChangeZNode.PREFIXED_ROOT],
        now_ms=clock.now_ms,
        writes_allowed=lambda: cluster.state.writes_allowed,
    )
    lockout_store = ZkLockoutStore(zk, service_id=settings.service_id, clock=clock)
    locks = account_locks(settings, lockout_store, auditor, authorizer, clock)
    verify_guard = attempt_guard(settings, auditor, clock, Action.TOKEN_VERIFY)
    login_guard = attempt_guard(
        settings, auditor, clock, Action.AUTHENTICATION, locks if settings.auth_lockout_threshold else None
    )
    tokens = TokenService(
        token_store,
        token_cache,
        secret=secret,
        policy=_policy(settings, added_renewers=True),
        authorizer=authorizer,
        clock=clock,
        auditor=auditor,
        verify_guard=verify_guard,
        capacity=capacity,
        quota=_quota(settings),
        own_principal=identity.is_own,
        shares=shares,
    )
    revocation = TokenRevocation(token_store, token_cache, authorizer=authorizer, auditor=auditor, shares=shares)
    schedule = SweepSchedule.of(settings.delegation_token_expiry_check_interval_ms, capacity_policy)
    sweeper = Sweeper(
        token_store,
        token_cache,
        auditor=auditor,
        clock=clock,
        interval_ms=schedule.interval_ms,
        room=capacity.sweep_room,
        early_threshold=schedule.threshold,
        near_capacity=capacity.near_limit,
        shares=shares,
        writes_allowed=lambda: cluster.state.writes_allowed,
    )
    bridge = TokenBridge(ZkTokenChanges(zk), lambda: cluster.state, auditor=auditor, clock=clock)
    # One leader does the cluster's chores (the election keeps its old name).
    sweeper_leadership = Leadership(
        zk,
        KtsZNodes.SWEEPER_ELECTION,
        settings.service_id,
        leader_duties(settings, sweeper, purger, locks, audit_log, clock, bridge),
    )
    reconciler = AuditReconciler(audit_log, intents, clock=clock, service_id=settings.service_id)
    readiness = Readiness(
        cluster_connected=lambda: zk.connected,
        tokens_loaded=lambda: token_cache.loaded,
        acls_loaded=lambda: acl_cache.loaded,
        audit_log=audit_log,
        backend="zookeeper",
        cluster=lambda: cluster.state,
        facts=lambda: zookeeper_facts(settings, cluster.state.view.cluster_id, identity),
        unrenewable=_unrenewable(settings, token_cache, clock),
    )
    return Runtime(
        settings=settings,
        backend="zookeeper",
        audit_log=audit_log,
        tokens=tokens,
        revocation=revocation,
        users=UserCredentialService(
            user_store,
            authorizer=authorizer,
            auditor=auditor,
            revocation=revocation if settings.token_revoke_on_credential_delete else None,
            locks=locks,
        ),
        acls=AclService(
            acl_store,
            acl_cache,
            authorizer=authorizer,
            auditor=auditor,
            super_users=settings.super_user_principals,
            tokens_for_super_users=settings.token_create_for_super_users,
            revocation=revocation if settings.token_revoke_on_acl_delete else None,
        ),
        audit_trail=AuditTrail(audit_log, authorizer=authorizer),
        metrics_access=MetricsAccess(auth_required=settings.metrics_auth_required, authorizer=authorizer),
        reconciler=reconciler,
        authenticator=Authenticator(
            BasicAuthenticator(StoredKeyCredentials(credentials), clock),
            tokens,
            client_auth=settings.ssl_client_auth,
            mapper=SslPrincipalMapper.from_rules(settings.ssl_principal_mapping_rules),
            auditor=auditor,
            guard=login_guard,
            jwt=jwt_authenticator(settings, clock),
            own=identity,
        ),
        attempt_guards=[guard for guard in (verify_guard, login_guard) if guard is not None],
        readiness=readiness,
        cluster_status=ClusterStatus(readiness, authorizer=authorizer),
        cluster_connected=lambda: zk.connected,
        startup=[
            zk.start,
            cluster.start,  # before anything writes: the fence needs its first reading
            lambda: ensure_cluster_secret(zk, secret),
            lambda: warn_shared_identity(settings, identity, user_store),
            lockout_store.start,
            acl_cache.start,
            credentials.start,
            token_cache.start,
            lambda: _first_reading(capacity),
            reconciler.start,
            sweeper_leadership.start,
        ],
        shutdown=[
            sweeper_leadership.stop,
            reconciler.stop,
            token_cache.stop,
            credentials.stop,
            acl_cache.stop,
            cluster.stop,
            zk.stop,
        ],
        readings_of=lambda: RuntimeReadings(
            cached_tokens=lambda: len(token_cache),
            acl_entries=lambda: len(acl_cache.snapshot()),
            sweep_runs=lambda: sweeper.runs_total,
            early_sweep_runs=lambda: sweeper.early_runs_total,
            expired_tokens=lambda: token_cache.expired_count(clock.now_ms()),
            swept_tokens=lambda: sweeper.deleted_total,
            leads_sweeper=lambda: sweeper_leadership.is_leader,
            cluster_state=lambda: zk.state.lower(),
            backend="zookeeper",
            child_lists=lambda: _child_list_figures(capacity),
            replicas=lockout_store.replicas,
            account_locks=lockout_store.in_force,
            cluster_phase=lambda: cluster.state.phase.value,
            bridged_notifications=lambda: bridge.notifications_total,
        ),
    )
