"""The composition root: builds the services once, over whichever cluster backend the settings select
(app/backend_selection.py; each backend is one assembly under app/storage/, app/service/backend.py's
``ClusterBackend``), and runs the life cycle of both. The API (``create_app``'s lifespan) and the server commands
use it; the HTTP layer then sees only the services and views it exposes (``app/api/deps.py``). It holds no policy:
the settings' choices are read in app/policies.py, a backend's own in its assembly. Nothing here runs at import."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from app.auth.authenticator import Authenticator
from app.auth.basic import BasicAuthenticator
from app.auth.own_identity import shared_identity_warnings
from app.backend_selection import BackendFactory, storage
from app.domain.audit import Action
from app.domain.clock import Clock, SystemClock
from app.leader.duties import Duty, side_by_side
from app.observability.metrics import KtsMetrics, RuntimeReadings
from app.policies import policies
from app.service.acls import AclService
from app.service.attempts import AttemptGuard
from app.service.audit import AuditLog, AuditObserver, Auditor
from app.service.audit_retention import AuditRetention
from app.service.audit_trail import AuditTrail
from app.service.backend import Reconciler
from app.service.lockout import AccountLocks
from app.service.metrics_access import MetricsAccess
from app.service.readiness import ClusterStatus, Readiness
from app.service.revocation import TokenRevocation
from app.service.tokens import TokenService
from app.service.users import UserCredentialService
from app.settings import Settings
from app.storage.loaded_for_good import loaded_for_good

log = logging.getLogger(__name__)
VERIFY, LOGIN = Action.TOKEN_VERIFY, Action.AUTHENTICATION


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
    backend_factory: BackendFactory | None = None,
) -> Runtime:
    """``audit_log`` replaces the database-backed log (benchmarks measure auditing against a no-op sink);
    ``audit_observer`` is told how each action ended (the metrics). Built in the order the layers stand: what the
    replica stores in (app/backend_selection.py), the rules (app/policies.py), then the services over both."""
    clock = clock or SystemClock()
    stored = storage(settings, clock, audit_log, backend_factory)
    secret = stored.secret
    backend = stored.backend
    rules = policies(settings, clock, backend)
    auditor = Auditor(stored.audit_log, backend.intents, observer=audit_observer)
    authorizer = rules.authorizer
    bound = backend.bind(auditor, authorizer)
    locks = AccountLocks(
        rules.lockout,
        backend.lockout_store,
        auditor=auditor,
        authorizer=authorizer,
        exempt=settings.lockout_exempt_addresses,
    )
    verify_guard = None if rules.verify_throttle is None else AttemptGuard(rules.verify_throttle, auditor, VERIFY)
    login_guard = (
        None
        if rules.login_throttle is None
        else AttemptGuard(rules.login_throttle, auditor, LOGIN, lockout=locks if rules.locks_logins else None)
    )
    tokens = TokenService(
        backend.token_store,
        backend.token_view,
        secret=secret,
        policy=rules.token,
        authorizer=authorizer,
        clock=clock,
        auditor=auditor,
        verify_guard=verify_guard,
        admission=bound.admission,
        quota=rules.quota,
        own_principal=rules.identity.is_own,
    )
    revocation = TokenRevocation(
        backend.token_store, backend.token_view, authorizer=authorizer, auditor=auditor, admission=bound.admission
    )
    cleanup_ms = settings.auth_lockout_cleanup_interval_ms
    duties: list[tuple[str, Duty]] = [
        *bound.leader.duties,
        ("lockout-cleaner", lambda lost: locks.run_cleanup(lost, cleanup_ms)),
    ]
    if settings.audit_retention_days is not None:
        retention = AuditRetention(stored.audit_log, clock, days=settings.audit_retention_days)
        duties.append(("audit-retention", retention.run))
    leadership = None if bound.leader.leadership is None else bound.leader.leadership(side_by_side(duties))
    users = UserCredentialService(
        backend.user_store,
        authorizer=authorizer,
        auditor=auditor,
        revocation=revocation if settings.token_revoke_on_credential_delete else None,
        locks=locks,
    )
    acls = AclService(
        backend.acl_store,
        backend.acl_view,
        authorizer=authorizer,
        auditor=auditor,
        super_users=settings.super_user_principals,
        tokens_for_super_users=settings.token_create_for_super_users,
        revocation=revocation if settings.token_revoke_on_acl_delete else None,
    )
    audit_trail = AuditTrail(stored.audit_log, authorizer=authorizer)
    metrics_access = MetricsAccess(auth_required=settings.metrics_auth_required, authorizer=authorizer)
    status = ClusterStatus(backend.readiness, authorizer=authorizer)
    authenticator = Authenticator(
        BasicAuthenticator(backend.credentials, clock),
        tokens,
        client_auth=settings.ssl_client_auth,
        mapper=rules.mapper,
        auditor=auditor,
        guard=login_guard,
        jwt=rules.jwt,
        own=rules.identity,
    )

    def warn_shared_identity() -> None:
        """When kts's own principal is also a login someone may present to kts."""
        own_scram = backend.own_login.scram_user
        supers = settings.super_user_principals
        for warning in shared_identity_warnings(rules.identity, supers, backend.user_store, own_scram_login=own_scram):
            log.warning(warning)

    return Runtime(
        settings=settings,
        backend=backend.name,
        audit_log=stored.audit_log,
        tokens=tokens,
        revocation=revocation,
        users=users,
        acls=acls,
        audit_trail=audit_trail,
        metrics_access=metrics_access,
        reconciler=backend.reconciler,
        authenticator=authenticator,
        attempt_guards=[guard for guard in (verify_guard, login_guard) if guard is not None],
        readiness=backend.readiness,
        cluster_status=status,
        cluster_connected=backend.readiness.cluster_connected,
        prepare=list(stored.prepare),
        startup=[backend.connect, warn_shared_identity, backend.start, *([leadership.start] if leadership else [])],
        shutdown=[*([leadership.stop] if leadership else []), backend.stop],
        readings_of=backend.readings,
    )


class EarlyStart:
    """A runtime's ``start`` begun in a thread of its own as soon as the runtime is built (``kts serve``), so that
    what the replica still does before it serves (import and build the HTTP layer, start the server) runs while
    ZooKeeper answers start-up's reads rather than before them. The app's lifespan waits for it (``started``): the
    server answers nothing, /readyz included, before the runtime has started, as when the lifespan starts it."""

    def __init__(self, runtime: Runtime, metrics: KtsMetrics) -> None:
        self.runtime = runtime
        self.metrics = metrics  # the app's: the runtime tells it how each audited action ended
        self._done: Future[None] = Future()
        threading.Thread(target=self._start, name="runtime-start", daemon=True).start()

    def _start(self) -> None:
        try:
            self.runtime.start()
        except BaseException as exc:  # raised again in the lifespan, which fails the server's start-up
            self._done.set_exception(exc)
        else:
            self._done.set_result(None)

    async def started(self) -> Runtime:
        """The runtime, once started (or what its start raised)."""
        await asyncio.wrap_future(self._done)
        # The start froze what it loaded (app/storage/loaded_for_good.py); the HTTP layer built meanwhile lives as
        # long as the replica too, so the collector never walks it either.
        gc.freeze()
        return self.runtime


def start_early(settings: Settings, audit_log: AuditLog | None = None) -> EarlyStart:
    """``build_runtime`` for ``settings`` with a metrics registry for the app, started in the background."""
    metrics = KtsMetrics()
    return EarlyStart(build_runtime(settings, audit_log=audit_log, audit_observer=metrics), metrics)
