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
from app.observability.metrics import ChildListFigures, RuntimeReadings, SweepReadings, ZooKeeperReadings
from app.service.audit import AuditLog, Auditor, AuditReconciler
from app.service.backend import Bound, Duty, LeaderWork, OwnLogin
from app.service.ports import LockoutStore
from app.service.readiness import Readiness
from app.storage.loaded_for_good import reloaded_for_good
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.admission import ZkAdmission
from app.storage.zk.capacity import CapacityGuard
from app.storage.zk.child_lists import ZkChildLists
from app.storage.zk.cluster_watch import ClusterWatch
from app.storage.zk.connection import ZkConnection
from app.storage.zk.credential_cache import CredentialCache
from app.storage.zk.election import Leadership
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.lockout_store import ZkLockoutStore
from app.storage.zk.migration_prep import MigrationPreparation, unrenewable
from app.storage.zk.notification_purger import NotificationPurger
from app.storage.zk.secret_fingerprint_store import ZkSecretFingerprintStore
from app.storage.zk.settings import ZooKeeperSettings
from app.storage.zk.sweeper import Sweeper
from app.storage.zk.token_bridge import TokenBridge
from app.storage.zk.token_cache import TokenCache
from app.storage.zk.token_changes import ZkTokenChanges
from app.storage.zk.token_shares import TokenShares
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import AclChangeZNode, KtsZNodes, TokenChangeZNode

log = logging.getLogger(__name__)
T = TypeVar("T")


class _Settings(Protocol):
    """What this backend reads of app/settings.py's ``Settings``: the service's keys, and its own group."""

    @property
    def delegation_token_expiry_check_interval_ms(self) -> int: ...
    @property
    def service_id(self) -> str: ...
    @property
    def secret_key(self) -> str: ...
    def group(self, backend: type[ZooKeeperSettings]) -> ZooKeeperSettings: ...


def zk_connection(settings: _Settings) -> ZkConnection:
    """The ZooKeeper session of these settings: address, timeouts, login, TLS, znode ACL policy, and whether a
    Kafka cluster must already live there."""
    own = settings.group(ZooKeeperSettings)
    return ZkConnection(
        own.connect_string,
        session_timeout_ms=own.session_timeout_ms,
        connection_timeout_ms=own.connection_timeout_ms,
        security=own.security,
        require_cluster=own.cluster_required,
    )


class ZooKeeperBackend:
    """The parts of one replica that reach the cluster through ZooKeeper (docs/architecture.md#layers)."""

    name = "zookeeper"

    def __init__(self, settings: _Settings, clock: Clock, audit_log: AuditLog, secret: TokenSecret) -> None:
        """Built in the order the layers stand: the stores and caches, then what the services' ports see of them."""
        self._settings = settings
        self._own = own = settings.group(ZooKeeperSettings)
        self._clock = clock
        self._secret = secret
        self.zk = zk = zk_connection(settings)
        self.cluster = ClusterWatch(zk)
        zk.write_fence = self.cluster  # every token, ACL and credential write checks the cluster's controller
        self.intents = ZkIntentStore(zk)
        self.acl_store = ZkAclStore(zk)
        self.acl_view = self._acl_cache = AclCache(zk, self.acl_store)
        self.user_store = ZkUserStore(zk)
        self._credential_cache = CredentialCache(zk, self.user_store)
        self.token_store = ZkTokenStore(zk, znode_version=own.token_znode_version)
        self.token_view = self._token_cache = TokenCache(
            zk, self.token_store, secret, while_reloading=reloaded_for_good
        )
        self._zk_lockout = ZkLockoutStore(zk, service_id=settings.service_id, clock=clock)
        self.lockout_store: LockoutStore = self._zk_lockout
        self._child_lists = ZkChildLists(zk)
        self.credentials = StoredKeyCredentials(self._credential_cache)  # what Basic logins check passwords against
        self.reconciler = AuditReconciler(audit_log, self.intents, clock=clock, service_id=settings.service_id)
        try:  # kts's principal on bootstrap.servers, whose renewals a migration needs (prepare-migration reports)
            renewer = own.kafka_login_principal
        except ValueError:
            renewer = None
        renewer = renewer or next(iter(own.added_renewers), None)
        self.readiness = Readiness(
            cluster_connected=lambda: zk.connected,
            tokens_loaded=lambda: self._token_cache.loaded,
            acls_loaded=lambda: self._acl_cache.loaded,
            audit_log=audit_log,
            backend=self.name,
            cluster=lambda: self.cluster.state,
            facts=self._facts,
            unrenewable=None if renewer is None else lambda: unrenewable(self._token_cache, renewer, clock.now_ms()),
        )
        login = own.security.login
        self.own_login = OwnLogin(
            () if login is None else (KafkaPrincipal.user(login.username),), source="its SASL login to ZooKeeper"
        )
        self.renewers_added = own.added_renewers  # ``token.renewers.add``: named on every token created
        self.capacity: CapacityGuard | None = None  # bound with the admission
        self._sweeper: Sweeper | None = None
        self._bridge: TokenBridge | None = None
        self._leadership: Leadership | None = None

    def bind(self, auditor: Auditor, authorizer: Authorizer) -> Bound:
        """The write shares (which exempt super users), and the leader's chores: sweep expired tokens, purge old
        notifications and, during a migration's dual write, bridge the KRaft controller's token changes to the
        brokers still in ZooKeeper mode. One leader does them all; its election keeps its old name."""
        settings, own, clock, zk = self._settings, self._own, self._clock, self.zk
        policy = CapacityPolicy(own.children_max_bytes)
        self.capacity = capacity = CapacityGuard(
            self._child_lists,
            policy,
            clock=clock,
            next_expiry_ms=lambda: min((s.token.expiry_timestamp for s in self._token_cache.tokens()), default=None),
        )
        shares = TokenShares(
            SharePolicy.of(own.children_max_bytes, own.write_share_ratio),
            self._token_cache,
            clock=clock,
            authorizer=authorizer,
        )
        admission = ZkAdmission(capacity, shares, authorizer=authorizer)
        schedule = SweepSchedule.of(settings.delegation_token_expiry_check_interval_ms, policy)
        writes_allowed = self._writes_allowed
        self._sweeper = sweeper = Sweeper(
            self.token_store,
            self._token_cache,
            auditor=auditor,
            clock=clock,
            interval_ms=schedule.interval_ms,
            room=capacity.sweep_room,
            early_threshold=schedule.threshold,
            near_capacity=capacity.near_limit,
            admission=admission,
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
        return Bound(admission, LeaderWork(duties, self._elected))

    def _elected(self, duty: Duty) -> Leadership:
        self._leadership = Leadership(self.zk, KtsZNodes.SWEEPER_ELECTION, self._settings.service_id, duty)
        return self._leadership

    def _writes_allowed(self) -> bool:
        return self.cluster.state.writes_allowed

    def connect(self) -> None:
        self.zk.start()
        self.cluster.start()  # before anything writes: the fence needs its first reading
        ensure_cluster_secret(self.zk, self._secret)

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
            cluster_state=lambda: self.zk.state.lower(),
            backend=self.name,
            replicas=self._zk_lockout.replicas,
            account_locks=self._zk_lockout.in_force,
            expired_tokens=lambda: self._token_cache.expired_count(clock.now_ms()),
            sweeps=SweepReadings(
                runs=lambda: 0 if sweeper is None else sweeper.runs_total,
                swept=lambda: 0 if sweeper is None else sweeper.deleted_total,
                leads=lambda: self._leadership is not None and self._leadership.is_leader,
                early_runs=lambda: 0 if sweeper is None else sweeper.early_runs_total,
            ),
            zookeeper=ZooKeeperReadings(
                child_lists=self._child_list_figures,
                cluster_phase=lambda: self.cluster.state.phase.value,
                bridged_notifications=lambda: 0 if bridge is None else bridge.notifications_total,
            ),
        )

    def _child_list_figures(self) -> list[ChildListFigures] | None:
        """Each child list's entries and bytes, and the bytes left before creates are refused (None: unreadable)."""
        if self.capacity is None:
            return None
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
        hosts, _, _chroot = self._own.connect_string.partition("/")
        return ClusterFacts(
            mode="zookeeper",
            cluster_id=self.cluster.state.view.cluster_id,
            nodes=tuple(host.strip() for host in hosts.split(",") if host.strip()),
            metadata_version=None,
            principal=", ".join(sorted(str(principal) for principal in self.own_login.configured)) or None,
            secret_check="matches the fingerprint the cluster keeps (checked at start)",  # noqa: S106 - a result
        )

    @staticmethod
    def check(settings: _Settings) -> None:
        """One session before serving: an unreachable ensemble, a rejected login (StoreUnavailable) or a secret other
        than the cluster's (SecretKeyMismatch) is one line from the CLI."""
        zk = zk_connection(settings)
        zk.check(then=lambda: ensure_cluster_secret(zk, TokenSecret(settings.secret_key)))

    @staticmethod
    def with_lockout_store(settings: _Settings, clock: Clock, use: Callable[[ZkLockoutStore], T]) -> T:
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


def with_cluster_writes_in_zookeeper(
    settings: _Settings, audit_log: AuditLog, clock: Clock, use: Callable[[MigrationPreparation], T]
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
        store = ZkTokenStore(zk, znode_version=settings.group(ZooKeeperSettings).token_znode_version)
        auditor = Auditor(audit_log, ZkIntentStore(zk))
        results.append(use(MigrationPreparation(store, auditor=auditor, clock=clock)))

    zk.check(then=connected)
    return results[0]
