"""The composition root: builds the services once, over whichever cluster backend the settings select
(app/backends.py; each backend is one assembly under app/storage/, app/service/backend.py's ``ClusterBackend``),
and runs the life cycle of both. The API (``create_app``'s lifespan) and the server commands use it; the HTTP layer
then sees only the services and views it exposes (``app/api/deps.py``). It holds no policy: the settings' choices
are read in app/policies.py, a backend's own in its assembly. Nothing here runs at import."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from app.auth.authenticator import Authenticator
from app.auth.basic import BasicAuthenticator
from app.auth.own_identity import OwnIdentity, shared_identity_warnings
from app.backends import cluster_backend
from app.domain.audit import Action
from app.domain.clock import Clock, SystemClock
from app.domain.lockout import AccountLockout
from app.domain.ssl_principal_mapper import SslPrincipalMapper
from app.domain.throttle import FailureThrottle, ThrottlePolicy
from app.domain.token_secret import TokenSecret
from app.leader.duties import Duty, side_by_side
from app.observability.metrics import RuntimeReadings
from app.policies import authorizer, jwt_authenticator, lockout_policy, throttle_policy, token_policy, token_quota
from app.service.acls import AclService
from app.service.attempts import AttemptGuard
from app.service.audit import AuditLog, AuditObserver, Auditor
from app.service.audit_retention import AuditRetention
from app.service.audit_trail import AuditTrail
from app.service.backend import ClusterBackend, Reconciler
from app.service.lockout import AccountLocks
from app.service.metrics_access import MetricsAccess
from app.service.readiness import ClusterStatus, Readiness
from app.service.revocation import TokenRevocation
from app.service.tokens import TokenService
from app.service.users import UserCredentialService
from app.settings import Settings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.loaded_for_good import loaded_for_good

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    """What one replica runs, whichever backend reaches the cluster: the services the API sees, and the steps that
    start and stop the connections, caches and background duties behind them."""

    settings: Settings
    backend: str  # zookeeper, kafka or memory
    audit_log: AuditLog
    tokens: TokenService
    revocation: TokenRevocation
    users: UserCredentialService
    acls: AclService
    audit_trail: AuditTrail
    metrics_access: MetricsAccess
    reconciler: Reconciler
    authenticator: Authenticator
    attempt_guards: list[AttemptGuard]
    readiness: Readiness
    cluster_status: ClusterStatus
    cluster_connected: Callable[[], bool]
    prepare: list[Callable[[], None]]  # in order, before start-up: the audit database's schema
    startup: list[Callable[[], None]]  # in order, once the audit database is ready
    shutdown: list[Callable[[], None]]  # in order
    readings_of: Callable[[], RuntimeReadings]

    def readings(self) -> RuntimeReadings:
        """What the metrics read at each scrape."""
        return self.readings_of()

    def start(self) -> None:
        for step in self.prepare:
            step()
        with loaded_for_good():
            for step in self.startup:
                step()

    def stop(self) -> None:
        for guard in self.attempt_guards:  # bursts still open are audited, not lost with the process
            guard.flush()
        for step in self.shutdown:
            step()


def build_runtime(
    settings: Settings,
    clock: Clock | None = None,
    audit_log: AuditLog | None = None,
    *,
    audit_observer: AuditObserver | None = None,
) -> Runtime:
    """``audit_log`` replaces the database-backed log (benchmarks measure auditing against a no-op sink; intents,
    quota turns and account locks are then this process's); ``audit_observer`` is told how each action ended (the
    metrics). The backend is the settings' (app/backends.py)."""
    clock = clock or SystemClock()
    secret = TokenSecret(settings.secret_key)
    if audit_log is not None:
        backend = cluster_backend(settings, clock, audit_log, secret, None)
        return _runtime(settings, backend, audit_log, secret, clock, audit_observer, prepare=[])
    database = SqlAuditLog(make_engine(settings.audit_db_url), service_id=settings.service_id, clock=clock)
    backend = cluster_backend(settings, clock, database, secret, database)
    prepare = [lambda: _migrate(database, settings)]
    return _runtime(settings, backend, database, secret, clock, audit_observer, prepare=prepare)


def _migrate(database: SqlAuditLog, settings: Settings) -> None:
    database.migrate(auto=settings.audit_db_auto_migrate)
    log.info("audit database %s at schema %s", describe_url(settings.audit_db_url), migrations.HEAD_REVISION)


def _runtime(
    settings: Settings,
    backend: ClusterBackend,
    audit_log: AuditLog,
    secret: TokenSecret,
    clock: Clock,
    audit_observer: AuditObserver | None,
    *,
    prepare: list[Callable[[], None]],
) -> Runtime:
    """The services over ``backend``, and the life cycle: the backend connects (and checks the secret), then the
    runtime's own warnings, the backend's caches and followers, the leadership; the reverse at stop."""
    auditor = Auditor(audit_log, backend.intents, observer=audit_observer)
    acl_authorizer = authorizer(settings, backend.acl_view)
    bound = backend.bind(auditor, acl_authorizer)
    own = backend.own_login
    identity = OwnIdentity(own.configured, own.learned, source=own.source)
    locks = AccountLocks(
        AccountLockout(lockout_policy(settings), clock),
        backend.lockout_store,
        auditor=auditor,
        authorizer=acl_authorizer,
        exempt=settings.lockout_exempt_addresses,
    )
    verify_guard = _guard(throttle_policy(settings, lockout=False), auditor, clock, Action.TOKEN_VERIFY)
    login_locks = locks if settings.auth_lockout_threshold else None
    login_guard = _guard(
        throttle_policy(settings, lockout=login_locks is not None), auditor, clock, Action.AUTHENTICATION, login_locks
    )
    tokens = TokenService(
        backend.token_store,
        backend.token_view,
        secret=secret,
        policy=token_policy(settings, backend.renewers_added),
        authorizer=acl_authorizer,
        clock=clock,
        auditor=auditor,
        verify_guard=verify_guard,
        capacity=bound.admission.capacity,
        quota=token_quota(settings),
        own_principal=identity.is_own,
        shares=bound.admission.shares,
    )
    revocation = TokenRevocation(
        backend.token_store,
        backend.token_view,
        authorizer=acl_authorizer,
        auditor=auditor,
        shares=bound.admission.shares,
    )
    duties: list[tuple[str, Duty]] = [
        *bound.leader.duties,
        ("lockout-cleaner", lambda lost: locks.run_cleanup(lost, settings.auth_lockout_cleanup_interval_ms)),
    ]
    if settings.audit_retention_days is not None:
        duties.append(("audit-retention", AuditRetention(audit_log, clock, days=settings.audit_retention_days).run))
    leadership = None if bound.leader.leadership is None else bound.leader.leadership(side_by_side(duties))

    def warn_shared_identity() -> None:
        """When kts's own principal is also a login someone may present to kts."""
        users, supers = backend.user_store, settings.super_user_principals
        for warning in shared_identity_warnings(identity, supers, users, own_scram_login=own.scram_user):
            log.warning(warning)

    return Runtime(
        settings=settings,
        backend=backend.name,
        audit_log=audit_log,
        tokens=tokens,
        revocation=revocation,
        users=UserCredentialService(
            backend.user_store,
            authorizer=acl_authorizer,
            auditor=auditor,
            revocation=revocation if settings.token_revoke_on_credential_delete else None,
            locks=locks,
        ),
        acls=AclService(
            backend.acl_store,
            backend.acl_view,
            authorizer=acl_authorizer,
            auditor=auditor,
            super_users=settings.super_user_principals,
            tokens_for_super_users=settings.token_create_for_super_users,
            revocation=revocation if settings.token_revoke_on_acl_delete else None,
        ),
        audit_trail=AuditTrail(audit_log, authorizer=acl_authorizer),
        metrics_access=MetricsAccess(auth_required=settings.metrics_auth_required, authorizer=acl_authorizer),
        reconciler=backend.reconciler,
        authenticator=Authenticator(
            BasicAuthenticator(backend.credentials, clock),
            tokens,
            client_auth=settings.ssl_client_auth,
            mapper=SslPrincipalMapper.from_rules(settings.ssl_principal_mapping_rules),
            auditor=auditor,
            guard=login_guard,
            jwt=jwt_authenticator(settings, clock),
            own=identity,
        ),
        attempt_guards=[guard for guard in (verify_guard, login_guard) if guard is not None],
        readiness=backend.readiness,
        cluster_status=ClusterStatus(backend.readiness, authorizer=acl_authorizer),
        cluster_connected=backend.readiness.cluster_connected,
        prepare=prepare,
        startup=[backend.connect, warn_shared_identity, backend.start, *([leadership.start] if leadership else [])],
        shutdown=[*([leadership.stop] if leadership else []), backend.stop],
        readings_of=backend.readings,
    )


def _guard(
    policy: ThrottlePolicy | None, auditor: Auditor, clock: Clock, action: Action, lockout: AccountLocks | None = None
) -> AttemptGuard | None:
    """The guard of one kind of attempt; None when neither the throttle nor the lockout is on."""
    return None if policy is None else AttemptGuard(FailureThrottle(policy, clock), auditor, action, lockout=lockout)
