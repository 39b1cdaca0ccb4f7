"""The composition root: builds every adapter and use case from settings; the only module that knows every
concrete class. The API (``create_app``'s lifespan) and the server commands use it; the HTTP layer then sees
only the services and views it exposes (``app/api/deps.py``). Nothing here runs at import."""

from __future__ import annotations

import logging
import secrets
import ssl
from dataclasses import dataclass

from app.auth.authenticator import Authenticator
from app.auth.basic import BasicAuthenticator
from app.auth.jwks import JwksKeys, fetcher
from app.auth.workload_jwt import JwtAuthenticator, JwtPolicy
from app.domain.acl import AclAuthorizer
from app.domain.audit import Action
from app.domain.capacity import CapacityPolicy, Purpose, with_notifications_to_come
from app.domain.clock import Clock, SystemClock
from app.domain.errors import KtsError
from app.domain.lockout import AccountLockout, LockoutPolicy
from app.domain.secret_fingerprint import SALT_BYTES, check_same_secret
from app.domain.ssl_principal_mapper import SslPrincipalMapper
from app.domain.throttle import FailureThrottle, ThrottlePolicy
from app.domain.token_quota import TokenQuota
from app.domain.token_rules import TokenPolicy
from app.domain.token_secret import TokenSecret
from app.leader.duties import side_by_side
from app.leader.sweeper import Sweeper
from app.observability.metrics import ChildListFigures, RuntimeReadings
from app.service.acls import AclService
from app.service.attempts import AttemptGuard
from app.service.audit import AuditLog, AuditObserver, Auditor, AuditReconciler
from app.service.audit_trail import AuditTrail
from app.service.capacity import CapacityGuard
from app.service.lockout import AccountLocks
from app.service.metrics_access import MetricsAccess
from app.service.readiness import Readiness
from app.service.revocation import TokenRevocation
from app.service.tokens import TokenService
from app.service.users import UserCredentialService
from app.settings import Settings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.child_lists import ZkChildLists
from app.storage.zk.cluster_watch import ClusterWatch
from app.storage.zk.connection import ZkConnection
from app.storage.zk.election import Leadership
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.lockout_store import ZkLockoutStore
from app.storage.zk.notification_purger import NotificationPurger
from app.storage.zk.secret_fingerprint_store import ZkSecretFingerprintStore
from app.storage.zk.token_cache import TokenCache
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import AclChangeZNode, KtsZNodes, TokenChangeZNode

log = logging.getLogger(__name__)
UNREACHED = 2**31  # a throttle limit no client reaches


@dataclass
class Runtime:
    settings: Settings
    zk: ZkConnection
    audit_log: AuditLog
    tokens: TokenService
    revocation: TokenRevocation
    users: UserCredentialService
    acls: AclService
    audit_trail: AuditTrail
    metrics_access: MetricsAccess
    acl_cache: AclCache
    token_cache: TokenCache
    sweeper: Sweeper
    capacity: CapacityGuard
    sweeper_leadership: Leadership
    reconciler: AuditReconciler
    authenticator: Authenticator
    attempt_guards: list[AttemptGuard]
    lockout_store: ZkLockoutStore
    readiness: Readiness
    cluster: ClusterWatch

    def readings(self) -> RuntimeReadings:
        """What the metrics read at each scrape."""
        return RuntimeReadings(
            cached_tokens=lambda: len(self.token_cache),
            acl_entries=lambda: len(self.acl_cache.snapshot()),
            sweep_runs=lambda: self.sweeper.runs_total,
            swept_tokens=lambda: self.sweeper.deleted_total,
            leads_sweeper=lambda: self.sweeper_leadership.is_leader,
            zookeeper_state=lambda: self.zk.state.lower(),
            child_lists=self._child_lists,
            replicas=self.lockout_store.replicas,
            cluster_phase=lambda: self.cluster.state.phase.value,
        )

    def _child_lists(self) -> list[ChildListFigures] | None:
        try:
            readings = self.capacity.read()
        except KtsError:
            return None
        limit = self.capacity.policy.limit(Purpose.ISSUE)
        counted = with_notifications_to_come(readings)
        return [
            ChildListFigures(
                child_list.value, reading.entries, reading.bytes, max(0, limit - counted[child_list].bytes)
            )
            for child_list, reading in readings.items()
        ]

    def start(self) -> None:
        if isinstance(self.audit_log, SqlAuditLog):
            self.audit_log.migrate(auto=self.settings.audit_db_auto_migrate)
            log.info(
                "audit database %s at schema %s", describe_url(self.settings.audit_db_url), migrations.head_revision()
            )
        self.zk.start()
        self.cluster.start()  # before anything writes: the fence needs its first reading
        ensure_cluster_secret(self.zk, TokenSecret(self.settings.secret_key))
        self.lockout_store.start()
        self.acl_cache.start()
        self.token_cache.start()
        self._child_lists()  # one reading at start: the capacity guard warns if a list is already past 80%
        self.reconciler.start()
        self.sweeper_leadership.start()

    def stop(self) -> None:
        for guard in self.attempt_guards:  # bursts still open are audited, not lost with the process
            guard.flush()
        self.sweeper_leadership.stop()
        self.reconciler.stop()
        self.token_cache.stop()
        self.acl_cache.stop()
        self.cluster.stop()
        self.zk.stop()


def zk_connection(settings: Settings) -> ZkConnection:
    """The ZooKeeper session of these settings: address, timeouts, login, TLS, znode ACL policy, and whether a
    Kafka cluster must already live there."""
    return ZkConnection(
        settings.zookeeper_connect,
        session_timeout_ms=settings.zookeeper_session_timeout_ms,
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
    settings: Settings, store: ZkLockoutStore, auditor: Auditor, authorizer: AclAuthorizer, clock: Clock
) -> AccountLocks:
    policy = LockoutPolicy(
        threshold=max(1, settings.auth_lockout_threshold),  # 0 (off): built for unlocking what is left only
        window_ms=settings.auth_lockout_window_ms,
        duration_ms=settings.auth_lockout_duration_ms,
        max_keys=settings.auth_throttle_max_keys,
    )
    return AccountLocks(AccountLockout(policy, clock), store, auditor=auditor, authorizer=authorizer, clock=clock)


def jwt_authenticator(settings: Settings, clock: Clock) -> JwtAuthenticator | None:
    """The workload JWT check of the ``sasl.oauthbearer.*`` settings; None without a JWKS endpoint URL."""
    url = settings.sasl_oauthbearer_jwks_endpoint_url
    if url is None:
        return None
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


def check_zookeeper(settings: Settings) -> None:
    """Connect once before serving, so an unreachable ZooKeeper, a rejected login (StoreUnavailable) or a secret
    key other than the cluster's (SecretKeyMismatch) is one line from the CLI rather than a start-up traceback
    in the log."""
    zk = zk_connection(settings)
    zk.check(then=lambda: ensure_cluster_secret(zk, TokenSecret(settings.secret_key)))


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
    ``audit_observer`` is told how each action ended (the metrics)."""
    clock = clock or SystemClock()
    zk = zk_connection(settings)
    cluster = ClusterWatch(zk)
    zk.write_fence = cluster  # every token, ACL and credential write checks the cluster's controller
    if audit_log is None:
        audit_log = SqlAuditLog(make_engine(settings.audit_db_url), service_id=settings.service_id, clock=clock)
    intents = ZkIntentStore(zk)
    auditor = Auditor(audit_log, intents, observer=audit_observer)
    acl_store = ZkAclStore(zk)
    acl_cache = AclCache(zk, acl_store)
    authorizer = AclAuthorizer(
        settings.super_user_principals,
        acl_cache.snapshot,
        allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
    )
    user_store = ZkUserStore(zk)
    secret = TokenSecret(settings.secret_key)
    token_store = ZkTokenStore(zk, znode_version=settings.token_znode_version)
    token_cache = TokenCache(zk, token_store, secret)
    capacity = CapacityGuard(
        ZkChildLists(zk),
        CapacityPolicy(settings.zookeeper_children_max_bytes),
        clock=clock,
        next_expiry_ms=lambda: min((stored.token.expiry_timestamp for stored in token_cache.tokens()), default=None),
    )
    purger = NotificationPurger(
        zk,
        [TokenChangeZNode.ROOT, AclChangeZNode.LITERAL_ROOT, AclChangeZNode.PREFIXED_ROOT],
        now_ms=clock.now_ms,
        writes_allowed=lambda: cluster.state.writes_allowed,
    )
    lockout_store = ZkLockoutStore(zk, service_id=settings.service_id)
    locks = account_locks(settings, lockout_store, auditor, authorizer, clock)
    verify_guard = attempt_guard(settings, auditor, clock, Action.TOKEN_VERIFY)
    login_guard = attempt_guard(
        settings, auditor, clock, Action.AUTHENTICATION, locks if settings.auth_lockout_threshold else None
    )
    tokens = TokenService(
        token_store,
        token_cache,
        secret=secret,
        policy=TokenPolicy(
            max_lifetime_ms=settings.delegation_token_max_lifetime_ms,
            default_renew_ms=settings.delegation_token_expiry_time_ms,
            create_for_super_users=settings.token_create_for_super_users,
        ),
        authorizer=authorizer,
        clock=clock,
        auditor=auditor,
        verify_guard=verify_guard,
        capacity=capacity,
        quota=TokenQuota(
            per_owner=settings.token_quota_per_owner,
            per_requester=settings.token_quota_per_requester,
            exempt_super_users=settings.token_quota_exempt_super_users,
        ),
    )
    revocation = TokenRevocation(token_store, token_cache, authorizer=authorizer, auditor=auditor)
    sweeper = Sweeper(
        token_store,
        token_cache,
        auditor=auditor,
        clock=clock,
        interval_ms=settings.delegation_token_expiry_check_interval_ms,
        room=capacity.sweep_room,
        writes_allowed=lambda: cluster.state.writes_allowed,
    )
    return Runtime(
        settings=settings,
        zk=zk,
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
        acl_cache=acl_cache,
        token_cache=token_cache,
        sweeper=sweeper,
        capacity=capacity,
        # One leader sweeps expired tokens and purges old notifications (the election keeps its old name).
        sweeper_leadership=Leadership(
            zk,
            KtsZNodes.SWEEPER_ELECTION,
            settings.service_id,
            side_by_side([("sweeper", sweeper.run), ("notification-purger", purger.run)]),
        ),
        reconciler=AuditReconciler(audit_log, intents, clock=clock, service_id=settings.service_id),
        authenticator=Authenticator(
            BasicAuthenticator(user_store, clock),
            tokens,
            client_auth=settings.ssl_client_auth,
            mapper=SslPrincipalMapper.from_rules(settings.ssl_principal_mapping_rules),
            auditor=auditor,
            guard=login_guard,
            jwt=jwt_authenticator(settings, clock),
        ),
        attempt_guards=[guard for guard in (verify_guard, login_guard) if guard is not None],
        lockout_store=lockout_store,
        readiness=Readiness(
            zookeeper_connected=lambda: zk.connected,
            tokens_loaded=lambda: token_cache.loaded,
            acls_loaded=lambda: acl_cache.loaded,
            audit_log=audit_log,
            cluster=lambda: cluster.state,
        ),
        cluster=cluster,
    )
