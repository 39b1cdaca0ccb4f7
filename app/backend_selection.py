"""Which cluster backend the settings select, and the server-side commands' ways into it outside a running replica
(``kts serve``'s check before serving, ``kts lockout``, ``kts cluster prepare-migration``): ZooKeeper wherever
``zookeeper.connect`` is set, else the Kafka protocol to ``bootstrap.servers``. The Kafka-protocol backend is
imported only when selected (its client takes a good part of a second to import)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from sqlalchemy import Engine

from app.domain.clock import Clock, SystemClock
from app.domain.errors import StoreUnavailable
from app.domain.token_secret import TokenSecret
from app.service.audit import AuditLog
from app.service.backend import ClusterBackend
from app.service.break_glass import BreakGlass
from app.service.ports import LockListing, LockoutStore
from app.settings import Settings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk.assembly import ZooKeeperBackend, with_cluster_writes_in_zookeeper
from app.storage.zk.migration_prep import MigrationPreparation

T = TypeVar("T")


class _SharedLocks(LockoutStore, LockListing, Protocol):
    """The account locks the replicas share, as an operator releases and lists them."""


@dataclass(frozen=True)
class Storage:
    """What a replica stores in: the audit log, and the cluster backend the settings select, built and not yet
    connected, with the secret of every token's HMAC (which the backend checks against the cluster's at connect)."""

    secret: TokenSecret
    audit_log: AuditLog
    backend: ClusterBackend
    prepare: Sequence[Callable[[], None]]  # before start-up: the audit database's schema migrated or checked


# A backend chosen by code rather than by the settings (the in-memory backend of the fast tests): built from the
# settings, the clock, the audit log and the token secret, as an assembly is.
BackendFactory = Callable[[Settings, Clock, AuditLog, TokenSecret], ClusterBackend]


def storage(
    settings: Settings,
    clock: Clock,
    audit_log: AuditLog | None = None,
    backend_factory: BackendFactory | None = None,
) -> Storage:
    """The audit database of ``audit.db.url`` (``audit_log`` replaces it: benchmarks measure auditing against a
    no-op sink; what replicas share in it is then this process's) and the backend over it: the settings' one, or
    ``backend_factory``'s."""
    secret = settings.token_secret
    database = None
    if audit_log is None:
        audit_log = database = SqlAuditLog(
            make_engine(settings.audit_db_url), service_id=settings.service_id, clock=clock
        )
    prepare = [] if database is None else [partial(database.migrate, auto=settings.audit_db_auto_migrate)]
    backend: ClusterBackend
    if backend_factory is not None:
        backend = backend_factory(settings, clock, audit_log, secret)
    elif settings.backend == "kafka":
        from app.storage.kafka.assembly import KafkaBackend

        backend = KafkaBackend(settings, clock, audit_log, secret, database)
    else:
        backend = ZooKeeperBackend(settings, clock, audit_log, secret)
    return Storage(secret, audit_log, backend, prepare)


def check_cluster(settings: Settings) -> None:
    """Connect once before serving, so an unreachable cluster, a rejected login, a cluster without delegation
    tokens (StoreUnavailable) or a secret key other than the cluster's (SecretKeyMismatch) is one line from the
    CLI rather than a start-up traceback in the log."""
    if settings.backend == "kafka":
        from app.storage.kafka.assembly import KafkaBackend

        KafkaBackend.check(settings)
        return
    ZooKeeperBackend.check(settings)


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

        def glass(store: _SharedLocks) -> T:
            return use(BreakGlass(store, store, audit_log, duration_ms=duration_ms, clock=clock))

        if settings.backend == "kafka":
            from app.storage.kafka.assembly import KafkaBackend

            return KafkaBackend.with_lockout_store(settings, engine, clock, glass)
        return ZooKeeperBackend.with_lockout_store(settings, clock, glass)


def with_cluster_writes(settings: Settings, use: Callable[[MigrationPreparation], T], clock: Clock | None = None) -> T:
    """``use`` kts's token writes in ZooKeeper mode from a command (``kts cluster prepare-migration``), connected for
    this call and closed after, with the audit database (app/storage/zk/assembly.py)."""
    clock = clock or SystemClock()
    with _command_audit_database(settings, clock) as (_, audit_log):
        return with_cluster_writes_in_zookeeper(settings, audit_log, clock, use)
