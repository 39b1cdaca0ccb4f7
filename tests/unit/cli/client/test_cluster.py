"""``kts cluster status``'s text, from ``GET /v1/cluster/status`` bodies (with credentials) and /readyz's."""

from __future__ import annotations

from app.cli.client.cluster import status_text

MIGRATING = {
    "status": "read-only",
    "reason": "migrating",
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
        "replica:               read-only (migrating)",
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
        "status": "not-ready",
        "reason": "cluster",
        "backend": "zookeeper",
        "checks": {"cluster": "zookeeper: session not connected", "tokens": "ok"},
        "migration": {**MIGRATING["migration"], "controller": {"nodeId": 0, "kraftControllerEpoch": -1}},  # type: ignore[dict-item]
    }
    text = status_text(body)
    assert "replica:               not ready: cluster: zookeeper: session not connected" in text
    assert "controller:            broker 0 (ZooKeeper mode)" in text


def test_the_kafka_backend_has_no_migration_to_follow() -> None:
    assert status_text({"status": "ready", "reason": "ok", "backend": "kafka", "checks": {}}).splitlines() == [
        "replica: ready",
        "backend: kafka",
    ]


def test_without_credentials_only_what_readyz_tells() -> None:
    assert status_text({"status": "ready", "reason": "ok"}).splitlines() == [
        "replica: ready",
        "details: give --command-config (Describe on the cluster) for the backend, checks and migration",
    ]
    not_ready = {"error": "NOT_READY", "message": "Not ready: cluster.", "status": "not-ready", "reason": "cluster"}
    assert status_text(not_ready).splitlines()[0] == "replica: not ready: cluster"
