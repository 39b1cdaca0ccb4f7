"""The cluster znodes, decoded from the bytes Kafka writes (``ZkData.scala``: Jackson over Scala maps, whose
order for four entries or fewer is the insertion order)."""

from __future__ import annotations

import pytest

from app.domain.cluster_migration import ControllerRegistration, MigrationRecord
from app.storage.zk.znodes import ClusterIdZNode, ControllerZNode, MalformedZNode, MigrationZNode

# ControllerZNode.encode(brokerId, timestamp) from a ZooKeeper-mode controller of Kafka 3.4 to 3.9.
ZK_CONTROLLER = b'{"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
# ... from Kafka 2.x to 3.3 (version 1 has no KRaft epoch).
OLD_ZK_CONTROLLER = b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}'
# ... written by KafkaZkClient.tryRegisterKRaftControllerAsActiveController when KRaft controller 3000 claims (read
# from a real 3.9.1 controller).
KRAFT_CONTROLLER = b'{"version":2,"brokerid":3000,"timestamp":"1795741741727","kraftControllerEpoch":1}'
# MigrationZNode.encode (a Scala HashMap: this key order), read from a real Kafka 3.9.1 controller's znodes: as it
# creates /migration at start (ZkMigrationLeadershipState.EMPTY), and once it has copied the metadata.
MIGRATION_WAITING = (
    b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,"kraft_metadata_epoch":-1,'
    b'"kraft_controller_epoch":-1}'
)
MIGRATION_DONE = (
    b'{"version":0,"kraft_metadata_offset":62,"kraft_controller_id":3000,"kraft_metadata_epoch":1,'
    b'"kraft_controller_epoch":1}'
)


def test_controller_znodes() -> None:
    assert ControllerZNode.decode(ZK_CONTROLLER) == ControllerRegistration(0, -1)
    assert ControllerZNode.decode(OLD_ZK_CONTROLLER) == ControllerRegistration(1, None)
    assert ControllerZNode.decode(KRAFT_CONTROLLER) == ControllerRegistration(3000, 1)
    assert ControllerZNode.decode(KRAFT_CONTROLLER).is_kraft


def test_migration_znodes() -> None:
    assert MigrationZNode.decode(MIGRATION_WAITING) == MigrationRecord(-1, -1, -1, -1)
    done = MigrationZNode.decode(MIGRATION_DONE)
    assert done == MigrationRecord(3000, 1, 62, 1)
    assert done.metadata_copied


def test_cluster_id() -> None:
    assert ClusterIdZNode.decode(b'{"version":"1","id":"Vjf5cGVHR0ujLH0pq2JzFw"}') == "Vjf5cGVHR0ujLH0pq2JzFw"


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (ControllerZNode.decode, b"not json"),
        (ControllerZNode.decode, b'{"version":2,"brokerid":"0"}'),
        (ControllerZNode.decode, b'{"version":2,"brokerid":0,"kraftControllerEpoch":"1"}'),
        (ControllerZNode.decode, b"[1]"),
        (MigrationZNode.decode, MIGRATION_DONE.replace(b'"version":0', b'"version":1')),
        (MigrationZNode.decode, b'{"version":0}'),
        (MigrationZNode.decode, b"\xff"),
        (ClusterIdZNode.decode, b'{"version":"1"}'),
        (ClusterIdZNode.decode, b'{"version":"1","id":""}'),
    ],
)
def test_what_kafka_does_not_write_is_malformed(decode: object, data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        decode(data)  # type: ignore[operator]
