"""What one cluster backend supplies to the runtime (``ClusterBackend``): the common ground of every way kts reaches
a cluster (ZooKeeper, the Kafka protocol, the in-memory backend of the fast tests), not the union of what each
needs inside. A backend is one folder under ``app/storage/`` with one assembly that builds these parts from its
settings; the composition root (``app/runtime.py``) builds the services once, from whichever backend the settings
select, and runs its life cycle. Adding a backend is the checklist in docs/architecture.md#adding-a-backend."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from app.domain.authorization import Authorizer
from app.domain.principal import KafkaPrincipal
from app.service.audit import Auditor, IntentStore
from app.service.ports import AclStore, AclView, CredentialSource, LockoutStore, TokenStore, TokenView, UserStore
from app.service.readiness import Readiness

if TYPE_CHECKING:
    from app.observability.metrics import RuntimeReadings
    from app.service.capacity import CapacityGuard
    from app.service.token_shares import TokenShares

# What the elected leader runs until ``lost`` is set (the same shape as app/leader/duties.py's ``Duty``).
Duty = Callable[[threading.Event], None]


class Leadership(Protocol):
    """One replica among those sharing the cluster runs the leader's duties; the others wait to take over."""

    @property
    def is_leader(self) -> bool: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Reconciler(Protocol):
    """Settles the audit events a crash or an outage left pending, against what the cluster holds."""

    def reconcile(self) -> object: ...


@dataclass(frozen=True)
class OwnLogin:
    """Who kts itself is to the cluster (app/auth/own_identity.py turns this into the identity no caller may be)."""

    configured: tuple[KafkaPrincipal, ...]  # the principal of kts's configured login, if any
    source: str  # where it comes from, for messages: the setting that names the login (never its password)
    learned: Callable[[], KafkaPrincipal | None] = lambda: None  # the principal the cluster answered, once connected
    scram_user: str | None = None  # kts's SCRAM login name, which a caller could also present to kts


@dataclass(frozen=True)
class Admission:
    """What limits token writes beyond the token rules: the capacity guard and write shares of the ZooKeeper child
    lists. Today's ``TokenService``/``TokenRevocation`` take these as optional parts; a backend without such
    limits gives ``OPEN_ADMISSION``."""

    capacity: CapacityGuard | None = None
    shares: TokenShares | None = None


OPEN_ADMISSION = Admission()


@dataclass(frozen=True)
class LeaderWork:
    """What the backend has its leader do (beside the duties every backend's leader has: ended account locks, audit
    retention), and the leadership that will run the whole; None: this process alone, no election."""

    duties: Sequence[tuple[str, Duty]] = ()
    leadership: Callable[[Duty], Leadership] | None = None


@dataclass(frozen=True)
class Bound:
    """The parts of a backend that need the services' auditor and authorizer (``ClusterBackend.bind``)."""

    admission: Admission = OPEN_ADMISSION
    leader: LeaderWork = field(default_factory=LeaderWork)


class ClusterBackend(Protocol):
    """One cluster backend, built by its assembly from its settings, the clock and the audit log. The runtime reads
    its stores and views, builds the auditor and authorizer over them, ``bind``s them back once, then runs the life
    cycle: ``connect``, the runtime's own checks, ``start``, the leadership; ``stop`` after the leadership."""

    @property
    def name(self) -> str:
        """zookeeper, kafka or memory: the ``backend`` of readiness and the metrics."""
        ...

    @property
    def token_store(self) -> TokenStore: ...

    @property
    def token_view(self) -> TokenView: ...

    @property
    def acl_store(self) -> AclStore: ...

    @property
    def acl_view(self) -> AclView: ...

    @property
    def user_store(self) -> UserStore: ...

    @property
    def credentials(self) -> CredentialSource:
        """What a Basic login's password is checked against."""
        ...

    @property
    def intents(self) -> IntentStore:
        """Where the auditor's intent markers live (app/service/audit.py's protocol)."""
        ...

    @property
    def lockout_store(self) -> LockoutStore:
        """Where replicas share account locks."""
        ...

    @property
    def own_login(self) -> OwnLogin: ...

    @property
    def renewers_added(self) -> tuple[KafkaPrincipal, ...]:
        """Renewers named on every token kts creates (``token.renewers.add``, where the backend writes tokens)."""
        ...

    @property
    def reconciler(self) -> Reconciler: ...

    @property
    def readiness(self) -> Readiness:
        """The probe behind /readyz and /v1/cluster/status."""
        ...

    def bind(self, auditor: Auditor, authorizer: Authorizer) -> Bound:
        """Called once, before ``connect``: the admission strategy and the leader's work, which need the services'
        auditor (the sweeper, the bridge) and authorizer (write shares)."""
        ...

    def connect(self) -> None:
        """Reach the cluster and check the secret key against it (SecretKeyMismatch)."""
        ...

    def start(self) -> None:
        """Load the caches and start what follows the cluster, once connected."""
        ...

    def stop(self) -> None:
        """Undo ``start`` and ``connect``, in reverse order."""
        ...

    def readings(self) -> RuntimeReadings:
        """What the metrics read at each scrape, this backend's section included."""
        ...
