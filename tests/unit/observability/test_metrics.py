"""The scrape-time figures of app/observability/metrics.py over readings given by the test: the deprecated
``kts_zookeeper_session_state`` repeats ``kts_cluster_connection_state`` in every state, in ZooKeeper mode only.
(The real app on each backend: tests/api/test_metrics.py.)"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.observability.metrics import (
    CLUSTER_STATES,
    DEPRECATED_SESSION_STATE,
    KtsMetrics,
    RuntimeReadings,
    ZooKeeperReadings,
)


def scrape(backend: str, state: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    metrics = KtsMetrics()
    metrics.watch(
        RuntimeReadings(
            cached_tokens=lambda: 0,
            acl_entries=lambda: 0,
            cluster_state=lambda: state,
            backend=backend,
            zookeeper=ZooKeeperReadings() if backend == "zookeeper" else None,
        )
    )
    families = text_string_to_metric_families(metrics.exposition().decode())
    return {
        family.name: {tuple(sorted(sample.labels.items())): sample.value for sample in family.samples}
        for family in families
        if family.name in ("kts_cluster_connection_state", DEPRECATED_SESSION_STATE)
    }


@pytest.mark.parametrize("state", CLUSTER_STATES)
def test_the_old_name_repeats_the_zookeeper_sessions_state(state: str) -> None:
    scraped = scrape("zookeeper", state)
    old = {dict(labels)["state"]: value for labels, value in scraped[DEPRECATED_SESSION_STATE].items()}
    new = {dict(labels)["state"]: value for labels, value in scraped["kts_cluster_connection_state"].items()}
    assert old == new == {name: 1.0 if name == state else 0.0 for name in CLUSTER_STATES}
    assert {dict(labels)["backend"] for labels in scraped["kts_cluster_connection_state"]} == {"zookeeper"}


@pytest.mark.parametrize("state", CLUSTER_STATES)
def test_through_the_kafka_protocol_only_the_new_name_exists(state: str) -> None:
    scraped = scrape("kafka", state)
    assert DEPRECATED_SESSION_STATE not in scraped
    assert scraped["kts_cluster_connection_state"][(("backend", "kafka"), ("state", state))] == 1.0


def test_nothing_of_the_runtime_before_it_is_watched() -> None:
    assert DEPRECATED_SESSION_STATE not in KtsMetrics().exposition().decode()
