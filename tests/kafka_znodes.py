"""The znodes a Kafka 3.9 cluster writes about its controller and its migration to KRaft, written with the same
operations and bytes as Kafka (``KafkaZkClient.scala``, ``ZkData.scala``), for tests that must not need a broker."""

from __future__ import annotations

from kazoo.client import KazooClient

TIMESTAMP = "1700000000000"


def zookeeper_controller(broker_id: int) -> bytes:
    """``ControllerZNode.encode(brokerId, timestamp)`` of Kafka 3.4 to 3.9."""
    return b'{"version":2,"brokerid":%d,"timestamp":"%s","kraftControllerEpoch":-1}' % (broker_id, TIMESTAMP.encode())


def kraft_controller(node_id: int, kraft_epoch: int) -> bytes:
    """``ControllerZNode.encode(kraftControllerId, timestamp, kraftControllerEpoch)``."""
    return b'{"version":2,"brokerid":%d,"timestamp":"%s","kraftControllerEpoch":%d}' % (
        node_id,
        TIMESTAMP.encode(),
        kraft_epoch,
    )


def migration(controller_id: int = -1, controller_epoch: int = -1, offset: int = -1, metadata_epoch: int = -1) -> bytes:
    """``MigrationZNode.encode`` (a Scala HashMap, hence this key order, as a real 3.9.1 controller wrote it); -1
    everywhere is ``ZkMigrationLeadershipState.EMPTY``."""
    return (
        b'{"version":0,"kraft_metadata_offset":%d,"kraft_controller_id":%d,"kraft_metadata_epoch":%d,'
        b'"kraft_controller_epoch":%d}' % (offset, controller_id, metadata_epoch, controller_epoch)
    )


def register_broker(client: KazooClient, broker_id: int) -> None:
    """A ZooKeeper-mode broker's registration (its content does not matter here)."""
    client.create(f"/brokers/ids/{broker_id}", b'{"version":5}', ephemeral=True, makepath=True)


def elect_zookeeper_controller(client: KazooClient, broker_id: int) -> None:
    """``registerControllerAndIncrementControllerEpoch``: /controller_epoch created at 0 the first time, then
    one transaction creates the ephemeral /controller and increments the epoch at the version read."""
    if client.exists("/controller_epoch") is None:
        client.create("/controller_epoch", b"0")
    data, stat = client.get("/controller_epoch")
    transaction = client.transaction()
    transaction.create("/controller", zookeeper_controller(broker_id), ephemeral=True)
    transaction.set_data("/controller_epoch", str(int(data) + 1).encode(), version=stat.version)
    _committed(transaction.commit())


def resign_zookeeper_controller(client: KazooClient) -> None:
    """The controller's ephemeral znode goes when its broker stops."""
    client.delete("/controller")


def provision_kraft_quorum(client: KazooClient) -> None:
    """A KRaft controller started with ``zookeeper.metadata.migration.enable=true`` (``getOrCreateMigrationState``)."""
    client.create("/migration", migration())


def claim_for_kraft(client: KazooClient, node_id: int = 3000, kraft_epoch: int = 1) -> None:
    """``tryRegisterKRaftControllerAsActiveController``: in one transaction, the epoch incremented at the version
    read, any /controller deleted at its version, and a persistent /controller naming the KRaft controller."""
    data, epoch_stat = client.get("/controller_epoch")
    current = client.exists("/controller")
    transaction = client.transaction()
    transaction.set_data("/controller_epoch", str(int(data) + 1).encode(), version=epoch_stat.version)
    if current is not None:
        transaction.delete("/controller", version=current.version)
    transaction.create("/controller", kraft_controller(node_id, kraft_epoch))
    _committed(transaction.commit())


def record_migration_done(client: KazooClient, node_id: int = 3000, kraft_epoch: int = 1, offset: int = 57) -> None:
    """``setMigrationRecoveryState`` after the copy: /migration records the KRaft offset of the copied metadata."""
    client.set("/migration", migration(node_id, kraft_epoch, offset, kraft_epoch))


def _committed(results: list[object]) -> None:
    failures = [result for result in results if isinstance(result, Exception)]
    if failures:
        raise failures[0]  # type: ignore[misc]
