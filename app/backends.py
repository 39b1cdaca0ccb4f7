"""Which cluster backend the settings select, and the server-side commands' ways into it outside a running replica
(``kts serve``'s check before serving, ``kts lockout``, ``kts cluster prepare-migration``): ZooKeeper wherever
``zookeeper.connect`` is set, else the Kafka protocol to ``bootstrap.servers``. The Kafka-protocol backend is
imported only when selected (its client takes a good part of a second to import)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

from sqlalchemy import Engine

from app.domain.clock import Clock, SystemClock
from app.domain.errors import StoreUnavailable
from app.domain.token_secret import TokenSecret
from app.service.audit import AuditLog
from app.service.backend import ClusterBackend
from app.service.break_glass import BreakGlass
from app.service.migration_prep import MigrationPreparation
from app.service.ports import LockListing, LockoutStore
from app.settings import Settings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk import assembly as zookeeper

T = TypeVar("T")


class _SharedLocks(LockoutStore, LockListing, Protocol):
    """The account locks the replicas share, as an operator releases and lists them."""


def cluster_backend(
    settings: Settings, clock: Clock, audit_log: AuditLog, secret: TokenSecret, database: SqlAuditLog | None
) -> ClusterBackend:
    """The backend the settings select, built and not yet connected. ``database``: the audit database the replicas
    share, the audit log itself (None: the audit log is no database)."""
    if settings.backend == "kafka":
        from app.storage.kafka.assembly import KafkaBackend

        return KafkaBackend(settings, clock, audit_log, secret, database)
    return zookeeper.ZooKeeperBackend(settings, clock, audit_log, secret)


def check_cluster(settings: Settings) -> None:
    """Connect once before serving, so an unreachable cluster, a rejected login, a cluster without delegation
    tokens (StoreUnavailable) or a secret key other than the cluster's (SecretKeyMismatch) is one line from the
    CLI rather than a start-up traceback in the log."""
    if settings.backend == "kafka":
        from app.storage.kafka.assembly import KafkaBackend

        KafkaBackend.check(settings)
        return
    zookeeper.ZooKeeperBackend.check(settings)


check_zookeeper = check_cluster  # the name kts dev and older callers use


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
        return zookeeper.ZooKeeperBackend.with_lockout_store(settings, clock, glass)


def with_cluster_writes(settings: Settings, use: Callable[[MigrationPreparation], T], clock: Clock | None = None) -> T:
    """``use`` kts's token writes in ZooKeeper mode from a command (``kts cluster prepare-migration``), connected for
    this call and closed after, with the audit database (app/storage/zk/assembly.py)."""
    clock = clock or SystemClock()
    with _command_audit_database(settings, clock) as (_, audit_log):
        return zookeeper.with_cluster_writes(settings, audit_log, clock, use)
