"""The ZooKeeper backend's section of ``GET /v1/cluster/status``: the cluster and its migration to KRaft as
ZooKeeper shows it (app/domain/cluster_migration.py), and the live tokens kts could not renew after a switch to
the Kafka protocol. The one place of the status body that speaks of ZooKeeper; other backends leave it null."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.domain.cluster_migration import ClusterState


class ControllerJson(BaseModel):
    nodeId: int = Field(description="The broker id of a ZooKeeper-mode controller, or a KRaft controller's node id.")
    kraftControllerEpoch: int | None = Field(description="Set (0 or more) when a KRaft controller holds /controller.")


class MigrationJson(BaseModel):
    phase: str = Field(
        description="The cluster's migration to KRaft as ZooKeeper shows it: `zookeeper`, `pre-migration`, "
        "`migrating`, `migrated`, or `unknown` (a znode that tells cannot be read).",
        examples=["zookeeper"],
    )
    writes: str = Field(description="`allowed`, or `refused` from `migrating` on.", examples=["allowed"])
    reason: str = Field(description="What kts sees, in a sentence.")
    clusterId: str | None = Field(description="The cluster id brokers wrote to /cluster/id.")
    controller: ControllerJson | None = Field(description="The active controller in /controller, if any.")
    kraftMetadataOffset: int | None = Field(
        description="The KRaft log offset /migration records (-1 until the metadata is copied); null without it."
    )
    zookeeperBrokers: int = Field(description="Brokers registered in ZooKeeper (/brokers/ids).")
    tokensKtsCannotRenew: int | None = Field(
        default=None,
        description="Live tokens kts could not renew or expire after a switch to bootstrap.servers: their owner and "
        "renewers lack kts's principal there (admin.sasl.jaas.config, else the first of token.renewers.add); "
        "`kts cluster prepare-migration` adds it. Null when neither key is set.",
    )


def migration_json(state: ClusterState, unrenewable: int | None = None) -> MigrationJson:
    view = state.view
    controller = view.controller
    return MigrationJson(
        phase=state.phase.value,
        writes="allowed" if state.writes_allowed else "refused",
        reason=state.reason,
        clusterId=view.cluster_id,
        controller=None
        if controller is None
        else ControllerJson(nodeId=controller.node_id, kraftControllerEpoch=controller.kraft_controller_epoch),
        kraftMetadataOffset=None if view.migration is None else view.migration.kraft_metadata_offset,
        zookeeperBrokers=view.zookeeper_brokers,
        tokensKtsCannotRenew=unrenewable,
    )
