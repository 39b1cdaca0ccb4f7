"""Where a ZooKeeper-mode Kafka cluster stands in its migration to KRaft, judged from what ZooKeeper shows, and
whether kts may still write tokens, ACLs and user credentials there.

What Kafka 3.4 to 3.9 writes, in order (``KRaftMigrationDriver``, ``KafkaZkClient``):

1. A KRaft controller started with ``zookeeper.metadata.migration.enable=true`` creates ``/migration`` with
   ``kraft_metadata_offset`` -1 and waits until every broker has been restarted into migration mode
   (**pre-migration**). ZooKeeper brokers still own the metadata; what kts writes now is copied later.
2. It then claims the cluster in one transaction: ``/controller_epoch`` incremented, ``/controller`` replaced by a
   persistent znode naming the KRaft controller with its ``kraftControllerEpoch`` (a ZooKeeper-mode controller
   writes -1 there, or no such field before 3.4). Only then does it read every token, ACL and user znode into
   its log, record the offset in ``/migration``, and make ZooKeeper match its log, deleting every token, ACL and
   credential znode it did not copy, without change notifications (**migrating**: dual-write). A znode written
   by anyone else from the claim on is lost, now or at its next full sync.
3. Brokers restart as KRaft brokers and leave ``/brokers/ids`` (**migrated** once none is left); whether the
   controllers were finalized cannot be seen from ZooKeeper.

So a KRaft controller in ``/controller``, or a ``/migration`` that records a finished copy, ends kts's writes.
So does a ``/controller_epoch`` missing while brokers are registered: every controller election writes it before
brokers can have run long, and nothing in Kafka deletes it, so its absence means the cluster is not what kts
knows, and without it the write fence below would have no version to check (fail closed, named as such).
The claim changes ``/controller_epoch``, so a write that carries a check of that znode's version, as read while
the cluster was in ZooKeeper mode, cannot land after the claim (app/storage/zk/cluster_watch.py).
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.domain.errors import ClusterMigrating


class Phase(StrEnum):
    ZOOKEEPER = "zookeeper"  # ZooKeeper mode, no migration begun
    PRE_MIGRATION = "pre-migration"  # a KRaft quorum waits for the brokers; ZooKeeper still owns the metadata
    MIGRATING = "migrating"  # a KRaft controller owns the metadata; some brokers still run in ZooKeeper mode
    MIGRATED = "migrated"  # a KRaft controller owns the metadata; no broker is registered in ZooKeeper
    UNKNOWN = "unknown"  # a znode that tells cannot be read as Kafka writes it


WRITABLE_PHASES = frozenset({Phase.ZOOKEEPER, Phase.PRE_MIGRATION})


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """``/controller``: the active controller, a ZooKeeper broker or (during a migration) a KRaft controller."""

    node_id: int
    kraft_controller_epoch: int | None  # absent before Kafka 3.4; -1 from a ZooKeeper-mode controller

    @property
    def is_kraft(self) -> bool:
        return self.kraft_controller_epoch is not None and self.kraft_controller_epoch >= 0


@dataclass(frozen=True, slots=True)
class MigrationRecord:
    """``/migration``: the KRaft controller's record of the migration."""

    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int

    @property
    def metadata_copied(self) -> bool:
        """The controller has copied ZooKeeper's metadata into its log (Kafka's ``initialZkMigrationComplete``)."""
        return self.kraft_metadata_offset > 0


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What ZooKeeper showed, read in this order: ``/controller_epoch``'s version first, then the rest, so a
    version that a KRaft claim wrote is never judged together with a ``/controller`` read before that claim."""

    controller_epoch_version: int | None  # None: no controller was ever elected
    controller: ControllerRegistration | None
    migration: MigrationRecord | None
    zookeeper_brokers: int  # registered under /brokers/ids
    cluster_id: str | None
    unreadable: tuple[str, ...] = ()  # paths whose data is not what Kafka writes


@dataclass(frozen=True, slots=True)
class ClusterState:
    phase: Phase
    reason: str  # a sentence for /readyz, the log and refusals
    view: ClusterView

    @property
    def writes_allowed(self) -> bool:
        return self.phase in WRITABLE_PHASES

    @property
    def fence_version(self) -> int | None:
        """The ``/controller_epoch`` version every write must still find (None: no check, no controller yet)."""
        return self.view.controller_epoch_version if self.writes_allowed else None

    def refusal(self) -> ClusterMigrating:
        return ClusterMigrating(
            f"The Kafka cluster is migrating from ZooKeeper to KRaft ({self.phase}: {self.reason}); kts in "
            "ZooKeeper mode no longer writes tokens, ACLs or user credentials, since the KRaft controller deletes "
            "what it did not make. Switch kts to the Kafka protocol: set bootstrap.servers instead of "
            "zookeeper.connect."
        )


def judge(view: ClusterView) -> ClusterState:
    controller, migration = view.controller, view.migration
    if view.unreadable:
        paths = ", ".join(view.unreadable)
        return ClusterState(Phase.UNKNOWN, f"{paths} cannot be read as Kafka writes it", view)
    kraft_controller = controller if controller is not None and controller.is_kraft else None
    if kraft_controller is not None or (migration is not None and migration.metadata_copied):
        owner = _owner(kraft_controller, migration)
        if view.zookeeper_brokers:
            plural = "brokers" if view.zookeeper_brokers > 1 else "broker"
            return ClusterState(
                Phase.MIGRATING, f"{owner}; {view.zookeeper_brokers} {plural} still in ZooKeeper mode", view
            )
        return ClusterState(Phase.MIGRATED, f"{owner}; no broker is registered in ZooKeeper", view)
    if view.controller_epoch_version is None and view.zookeeper_brokers:
        plural = "brokers are" if view.zookeeper_brokers > 1 else "broker is"
        return ClusterState(
            Phase.UNKNOWN,
            f"{view.zookeeper_brokers} {plural} registered in /brokers/ids but /controller_epoch is missing, which a "
            "controller always writes: kts cannot fence its writes against a KRaft controller's claim",
            view,
        )
    if migration is not None:
        known = migration.kraft_controller_id >= 0  # -1 until the controller records itself at its claim
        who = f"KRaft controller {migration.kraft_controller_id}" if known else "A KRaft controller"
        return ClusterState(
            Phase.PRE_MIGRATION,
            f"{who} is provisioned for the migration (/migration) and waits for the brokers; kts writes until it "
            "claims the cluster: switch kts to bootstrap.servers now",
            view,
        )
    return ClusterState(Phase.ZOOKEEPER, "ZooKeeper mode, no migration to KRaft begun", view)


def _owner(controller: ControllerRegistration | None, migration: MigrationRecord | None) -> str:
    if controller is not None:
        owner = f"KRaft controller {controller.node_id} (epoch {controller.kraft_controller_epoch}) owns the metadata"
    else:  # judge() calls this only with a KRaft controller or a finished copy
        owner = f"/migration records the metadata copied to KRaft controller {_id(migration)}"
    if migration is not None and migration.metadata_copied:
        owner += f", copied up to KRaft offset {migration.kraft_metadata_offset}"
    return owner


def _id(migration: MigrationRecord | None) -> str:
    return "?" if migration is None else str(migration.kraft_controller_id)
