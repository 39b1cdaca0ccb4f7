"""``kts cluster status``'s text, from /readyz bodies."""

from __future__ import annotations

from app.cli.client.cluster import status_text

MIGRATING = {
    "status": "read-only",
    "backend": "zookeeper",
    "checks": {"cluster": "ok"},
    "migration": {
        "phase": "migrating",
        "writes": "refused",
        "reason": "KRaft controller 3000 (epoch 1) owns the metadata",
        "clusterId": "Vjf5cGVHR0ujLH0pq2JzFw",
        "controller": {"nodeId": 3000, "kraftControllerEpoch": 1},
        "kraftMetadataOffset": 57,
        "zookeeperBrokers": 1,
    },
}


def test_a_migrating_cluster_one_fact_a_line() -> None:
    assert status_text(MIGRATING).splitlines() == [
        "replica:               read-only",
        "backend:               zookeeper",
        "phase:                 migrating (writes refused)",
        "reason:                KRaft controller 3000 (epoch 1) owns the metadata",
        "cluster id:            Vjf5cGVHR0ujLH0pq2JzFw",
        "controller:            KRaft controller 3000 (KRaft epoch 1)",
        "KRaft metadata offset: 57",
        "brokers in ZooKeeper:  1",
    ]


def test_a_zookeeper_controller_and_a_replica_not_ready() -> None:
    body = {
        "error": "NOT_READY",
        "message": "zookeeper: session not connected",
        "checks": {},
        "migration": {**MIGRATING["migration"], "controller": {"nodeId": 0, "kraftControllerEpoch": -1}},  # type: ignore[dict-item]
    }
    text = status_text(body)
    assert "replica:               not ready: zookeeper: session not connected" in text
    assert "controller:            broker 0 (ZooKeeper mode)" in text


def test_the_kafka_backend_has_no_migration_to_follow() -> None:
    assert status_text({"status": "ready", "backend": "kafka", "checks": {}}).splitlines() == [
        "replica: ready",
        "backend: kafka",
    ]
