"""The in-memory backend as one ``ClusterBackend`` (app/service/backend.py): every store and view of this folder,
for one replica and no cluster. The fast test tier runs the HTTP edge on it (create, describe, renew, expire,
users, ACLs, logins, lockout) without starting ZooKeeper or a broker; nothing survives the process.

It is also the proof of docs/architecture.md's "adding a backend" checklist: the folder implements the ports of
app/service/ports.py and passes the contract suites (tests/contract/), this assembly supplies the parts, and
nothing in app/service/ changed for it. There is no cluster to connect to or to check the secret key against,
no admission limit (``OPEN_ADMISSION``), and the leader is this process (``MemoryLeadership``), which runs the
duties every backend's leader has. Expired tokens stay until deleted (no sweeper: a broker's expiry is not
modelled); they are refused like any expired token.
"""

from __future__ import annotations

from typing import Protocol

from app.auth.basic import StoredKeyCredentials
from app.domain.authorization import Authorizer
from app.domain.clock import Clock
from app.domain.token_secret import TokenSecret
from app.observability.metrics import RuntimeReadings
from app.service.audit import AuditLog, Auditor, AuditReconciler
from app.service.backend import OPEN_ADMISSION, Bound, Duty, LeaderWork, OwnLogin
from app.service.readiness import Readiness
from app.storage.memory.acls import MemoryAclStore, MemoryAclView
from app.storage.memory.intents import MemoryIntentStore
from app.storage.memory.leadership import MemoryLeadership
from app.storage.memory.lockout_store import MemoryLockoutStore
from app.storage.memory.tokens import MemoryTokenStore, MemoryTokenView
from app.storage.memory.users import MemoryUserStore

NAME = "memory"


class MemorySettings(Protocol):
    """What of the settings this backend reads (app/settings.py's ``Settings`` has it)."""

    @property
    def service_id(self) -> str: ...


class MemoryBackend:
    """Built as the other assemblies are, from the settings, the clock, the audit log and the secret key; the
    audit database, if any, is not needed (intents and account locks are this process's)."""

    def __init__(
        self,
        settings: MemorySettings,
        clock: Clock,
        audit_log: AuditLog,
        secret: TokenSecret,
        database: object | None = None,
    ) -> None:
        self._clock = clock
        self._service_id = settings.service_id
        self.token_store = MemoryTokenStore(secret)
        self.token_view = MemoryTokenView(self.token_store)
        self.acl_store = MemoryAclStore()
        self.acl_view = MemoryAclView(self.acl_store)
        self.user_store = MemoryUserStore()
        self.credentials = StoredKeyCredentials(self.user_store)
        self.intents = MemoryIntentStore()
        self.lockout_store = MemoryLockoutStore(clock)
        self.own_login = OwnLogin(configured=(), source="the in-memory backend (no cluster login)")
        self.renewers_added = ()
        self.reconciler = AuditReconciler(audit_log, self.intents, clock=clock, service_id=settings.service_id)
        self.readiness = Readiness(
            cluster_connected=lambda: True,
            tokens_loaded=lambda: True,
            acls_loaded=lambda: True,
            audit_log=audit_log,
            backend=NAME,
        )
        self._leadership: MemoryLeadership | None = None

    @property
    def name(self) -> str:
        return NAME

    def bind(self, auditor: Auditor, authorizer: Authorizer) -> Bound:
        return Bound(admission=OPEN_ADMISSION, leader=LeaderWork(duties=(), leadership=self._lead))

    def _lead(self, duty: Duty) -> MemoryLeadership:
        self._leadership = MemoryLeadership(self._service_id, duty)
        return self._leadership

    def connect(self) -> None:
        pass  # no cluster: nothing to reach, no secret key to compare with

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def readings(self) -> RuntimeReadings:
        return RuntimeReadings(
            cached_tokens=lambda: len(self.token_store.list()),
            acl_entries=lambda: len(self.acl_view.snapshot().bindings()),
            sweep_runs=lambda: 0,
            swept_tokens=lambda: 0,
            leads_sweeper=lambda: self._leadership is not None and self._leadership.is_leader,
            cluster_state=lambda: "connected",
            backend=NAME,
            replicas=self.lockout_store.replicas,
            account_locks=self.lockout_store.in_force,
            expired_tokens=lambda: self.token_view.expired_count(self._clock.now_ms()),
        )
