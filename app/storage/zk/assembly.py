"""The ZooKeeper backend, assembled (``ZooKeeperBackend``, app/service/backend.py's ``ClusterBackend``): kts writes
tokens, ACLs and credentials in ZooKeeper as a broker writes them, while the cluster's controller is a ZooKeeper
broker. What only this backend has lives here: the write fence of a migrating cluster, the capacity guard and the
write shares of the child lists, the sweeper and its election, the notification purger, the migration's token
bridge and the secret's fingerprint znode. Also the commands' ways in (``kts serve``'s check, ``kts lockout``,
``kts cluster prepare-migration``), which open a session of their own."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Protocol, TypeVar

from app.auth.basic import StoredKeyCredentials
from app.domain.authorization import Authorizer
from app.domain.capacity import CapacityPolicy, Purpose, with_notifications_to_come
from app.domain.clock import Clock
from app.domain.cluster_facts import ClusterFacts
from app.domain.errors import KtsError
from app.domain.principal import KafkaPrincipal
from app.domain.secret_fingerprint import SALT_BYTES, check_same_secret
from app.domain.sweep_schedule import SweepSchedule
from app.domain.token_secret import TokenSecret
from app.domain.token_share import SharePolicy
from app.leader.sweeper import Sweeper
from app.observability.metrics import ChildListFigures, RuntimeReadings
from app.service.audit import AuditLog, Auditor, AuditReconciler
from app.service.backend import Admission, Bound, Duty, LeaderWork, OwnLogin
from app.service.capacity import CapacityGuard
from app.service.migration_prep import MigrationPreparation, unrenewable
from app.service.ports import LockoutStore
from app.service.readiness import Readiness
from app.service.token_bridge import TokenBridge
from app.service.token_shares import TokenShares
from app.storage.loaded_for_good import reloaded_for_good
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.child_lists import ZkChildLists
from app.storage.zk.client_security import ZkClientSecurity
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

log = logging.getLogger(__name__)
T = TypeVar("T")


class ZooKeeperSettings(Protocol):
    """The settings this backend reads (app/settings.py's ``Settings`` has them all)."""

    @property
    def zookeeper_connect(self) -> str | None: ...
    @property
    def zookeeper_connect_string(self) -> str: ...
    @property
    def zookeeper_session_timeout_ms(self) -> int: ...
    @property
    def zookeeper_connection_timeout_ms(self) -> int | None: ...
    @property
    def zookeeper_security(self) -> ZkClientSecurity: ...
    @property
    def zookeeper_cluster_required(self) -> bool: ...
    @property
    def zookeeper_children_max_bytes(self) -> int: ...
    @property
    def token_write_share_ratio(self) -> float: ...
    @property
    def token_znode_version(self) -> int: ...
    @property
    def delegation_token_expiry_check_interval_ms(self) -> int: ...
    @property
    def service_id(self) -> str: ...
    @property
    def secret_key(self) -> str: ...
    @property
    def added_renewers(self) -> tuple[KafkaPrincipal, ...]: ...
    @property
    def kafka_login_principal(self) -> KafkaPrincipal | None: ...


def zk_connection(settings: ZooKeeperSettings) -> ZkConnection:
    """The ZooKeeper session of these settings: address, timeouts, login, TLS, znode ACL policy, and whether a
    Kafka cluster must already live there."""
    return ZkConnection(
        settings.zookeeper_connect_string,
        session_timeout_ms=settings.zookeeper_session_timeout_ms,
        connection_timeout_ms=settings.zookeeper_connection_timeout_ms,
        security=settings.zookeeper_security,
        require_cluster=settings.zookeeper_cluster_required,
    )


class ZooKeeperBackend:
    """The parts of one replica that reach the cluster through ZooKeeper (docs/architecture.md#layers)."""

    name = "zookeeper"

    def __init__(self, settings: ZooKeeperSettings, clock: Clock, audit_log: AuditLog, secret: TokenSecret) -> None:
        self._settings = settings
        self._clock = clock
        self.zk = zk = zk_connection(settings)
        self.cluster = ClusterWatch(zk)
        zk.write_fence = self.cluster  # every token, ACL and credential write checks the cluster's controller
        self.intents = ZkIntentStore(zk)
        self.acl_store = ZkAclStore(zk)
        self.acl_view = self._acl_cache = AclCache(zk, self.acl_store)
        self.user_store = ZkUserStore(zk)
        self._credential_cache = CredentialCache(zk, self.user_store)
        self.credentials = StoredKeyCredentials(self._credential_cache)
        self.secret = secret
        self.token_store = ZkTokenStore(zk, znode_version=settings.token_znode_version)
        self.token_view = self._token_cache = TokenCache(
            zk, self.token_store, self.secret, while_reloading=reloaded_for_good
        )
        self._zk_lockout = ZkLockoutStore(zk, service_id=settings.service_id, clock=clock)
        self.lockout_store: LockoutStore = self._zk_lockout
        self._capacity_policy = CapacityPolicy(settings.zookeeper_children_max_bytes)
        self.capacity = CapacityGuard(
            ZkChildLists(zk),
            self._capacity_policy,
            clock=clock,
            next_expiry_ms=lambda: min((s.token.expiry_timestamp for s in self._token_cache.tokens()), default=None),
        )
        login = settings.zookeeper_security.login
        self.own_login = OwnLogin(
            () if login is None else (KafkaPrincipal.user(login.username),), source="its SASL login to ZooKeeper"
        )
        self.renewers_added = settings.added_renewers  # ``token.renewers.add``: named on every token created
        self.reconciler = AuditReconciler(audit_log, self.intents, clock=clock, service_id=settings.service_id)
        self.readiness = Readiness(
            cluster_connected=lambda: zk.connected,
            tokens_loaded=lambda: self._token_cache.loaded,
            acls_loaded=lambda: self._acl_cache.loaded,
            audit_log=audit_log,
            backend=self.name,
            cluster=lambda: self.cluster.state,
            facts=self._facts,
            unrenewable=self._unrenewable(),
        )
        self._sweeper: Sweeper | None = None
        self._bridge: TokenBridge | None = None
        self._leadership: Leadership | None = None

    def bind(self, auditor: Auditor, authorizer: Authorizer) -> Bound:
        """The write shares (which exempt super users), and the leader's chores: sweep expired tokens, purge old
        notifications and, during a migration's dual write, bridge the KRaft controller's token changes to the
        brokers still in ZooKeeper mode. One leader does them all; its election keeps its old name."""
        settings, clock, zk = self._settings, self._clock, self.zk
        shares = TokenShares(
            SharePolicy.of(settings.zookeeper_children_max_bytes, settings.token_write_share_ratio),
            self._token_cache,
            clock=clock,
            authorizer=authorizer,
        )
        schedule = SweepSchedule.of(settings.delegation_token_expiry_check_interval_ms, self._capacity_policy)
        writes_allowed = self._writes_allowed
        self._sweeper = sweeper = Sweeper(
            self.token_store,
            self._token_cache,
            auditor=auditor,
            clock=clock,
            interval_ms=schedule.interval_ms,
            room=self.capacity.sweep_room,
            early_threshold=schedule.threshold,
            near_capacity=self.capacity.near_limit,
            shares=shares,
            writes_allowed=writes_allowed,
        )
        purger = NotificationPurger(
            zk,
            [TokenChangeZNode.ROOT, AclChangeZNode.LITERAL_ROOT, AclChangeZNode.PREFIXED_ROOT],
            now_ms=clock.now_ms,
            writes_allowed=writes_allowed,
        )
        self._bridge = bridge = TokenBridge(
            ZkTokenChanges(zk), lambda: self.cluster.state, auditor=auditor, clock=clock
        )
        duties = [("sweeper", sweeper.run), ("notification-purger", purger.run), ("token-bridge", bridge.run)]
        return Bound(Admission(self.capacity, shares), LeaderWork(duties, self._elected))

    def _elected(self, duty: Duty) -> Leadership:
        self._leadership = Leadership(self.zk, KtsZNodes.SWEEPER_ELECTION, self._settings.service_id, duty)
        return self._leadership

    def _writes_allowed(self) -> bool:
        return self.cluster.state.writes_allowed

    def connect(self) -> None:
        self.zk.start()
        self.cluster.start()  # before anything writes: the fence needs its first reading
        ensure_cluster_secret(self.zk, self.secret)

    def start(self) -> None:
        self._zk_lockout.start()
        self._acl_cache.start()
        self._credential_cache.start()
        self._token_cache.start()
        self._child_list_figures()  # one reading at start: the capacity guard warns past 80% already
        self.reconciler.start()

    def stop(self) -> None:
        self.reconciler.stop()
        self._token_cache.stop()
        self._credential_cache.stop()
        self._acl_cache.stop()
        self.cluster.stop()
        self.zk.stop()

    def readings(self) -> RuntimeReadings:
        sweeper, bridge, clock = self._sweeper, self._bridge, self._clock
        return RuntimeReadings(
            cached_tokens=lambda: len(self._token_cache),
            acl_entries=lambda: len(self._acl_cache.snapshot()),
            sweep_runs=lambda: 0 if sweeper is None else sweeper.runs_total,
            early_sweep_runs=lambda: 0 if sweeper is None else sweeper.early_runs_total,
            expired_tokens=lambda: self._token_cache.expired_count(clock.now_ms()),
            swept_tokens=lambda: 0 if sweeper is None else sweeper.deleted_total,
            leads_sweeper=lambda: self._leadership is not None and self._leadership.is_leader,
            cluster_state=lambda: self.zk.state.lower(),
            backend=self.name,
            child_lists=self._child_list_figures,
            replicas=self._zk_lockout.replicas,
            account_locks=self._zk_lockout.in_force,
            cluster_phase=lambda: self.cluster.state.phase.value,
            bridged_notifications=lambda: 0 if bridge is None else bridge.notifications_total,
        )

    def _child_list_figures(self) -> list[ChildListFigures] | None:
        """Each child list's entries and bytes, and the bytes left before creates are refused (None: unreadable)."""
        try:
            readings = self.capacity.read()
        except KtsError:
            return None
        limit = self.capacity.policy.limit(Purpose.ISSUE)
        counted = with_notifications_to_come(readings)
        return [
            ChildListFigures(name.value, reading.entries, reading.bytes, max(0, limit - counted[name].bytes))
            for name, reading in readings.items()
        ]

    def _facts(self) -> ClusterFacts:
        """What ``kts cluster status`` tells of the cluster: the ensemble of ``zookeeper.connect`` (its chroot apart)
        and the principal of kts's SASL login to ZooKeeper, if any."""
        assert self._settings.zookeeper_connect is not None
        hosts, _, _chroot = self._settings.zookeeper_connect.partition("/")
        return ClusterFacts(
            mode="zookeeper",
            cluster_id=self.cluster.state.view.cluster_id,
            nodes=tuple(host.strip() for host in hosts.split(",") if host.strip()),
            metadata_version=None,
            principal=", ".join(sorted(str(principal) for principal in self.own_login.configured)) or None,
            secret_check="matches the fingerprint the cluster keeps (checked at start)",  # noqa: S106 - a result
        )

    def _unrenewable(self) -> Callable[[], int] | None:
        """How many live tokens kts's principal on bootstrap.servers could not renew (None: that principal is
        unknown, or ``admin.sasl.jaas.config`` names none, which prepare-migration reports)."""
        try:
            principal = self._settings.kafka_login_principal
        except ValueError:
            principal = None
        known = principal or next(iter(self._settings.added_renewers), None)
        if known is None:
            return None
        return lambda: unrenewable(self._token_cache, known, self._clock.now_ms())

    @staticmethod
    def check(settings: ZooKeeperSettings) -> None:
        """One session before serving: an unreachable ensemble, a rejected login (StoreUnavailable) or a secret other
        than the cluster's (SecretKeyMismatch) is one line from the CLI."""
        zk = zk_connection(settings)
        zk.check(then=lambda: ensure_cluster_secret(zk, TokenSecret(settings.secret_key)))

    @staticmethod
    def with_lockout_store(settings: ZooKeeperSettings, clock: Clock, use: Callable[[ZkLockoutStore], T]) -> T:
        """``use`` the account locks the replicas share (``kts lockout``), in one session within
        ``zookeeper.connection.timeout.ms``, kazoo's own retry warnings held back."""
        zk = zk_connection(settings)
        results: list[T] = []

        def connected() -> None:
            store = ZkLockoutStore(zk, service_id=settings.service_id, clock=clock)
            store.start()
            results.append(use(store))

        zk.check(then=connected)
        return results[0]


def ensure_cluster_secret(zk: ZkConnection, secret: TokenSecret) -> None:
    """Refuse (SecretKeyMismatch) a secret other than the one whose fingerprint the cluster keeps; record it
    when the cluster keeps none yet (docs/configuration.md#a-brokers-serverproperties)."""
    store = ZkSecretFingerprintStore(zk)
    if check_same_secret(store.record, secret, lambda: secrets.token_bytes(SALT_BYTES), store.PATH):
        log.info("recorded the fingerprint of delegation.token.secret.key at %s", store.PATH)


def with_cluster_writes(
    settings: ZooKeeperSettings, audit_log: AuditLog, clock: Clock, use: Callable[[MigrationPreparation], T]
) -> T:
    """``use`` kts's token writes from a command (``kts cluster prepare-migration``), connected for this call and
    closed after: the same store, write fence and intent markers as ``kts serve``, so each change carries its
    notification, is audited, and is refused once a KRaft controller has claimed the cluster (ClusterMigrating)."""
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
