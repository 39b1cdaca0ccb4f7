"""What ``kts cluster status`` tells an operator of the cluster itself, whichever way kts reaches it: the mode
(KRaft or ZooKeeper), the cluster's id, its brokers (or the ZooKeeper ensemble kts talks to), its
``metadata.version`` (KRaft), kts's own principal and the result of the start-up secret check."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    mode: str  # kraft or zookeeper
    cluster_id: str | None
    nodes: tuple[str, ...]  # the brokers (the Kafka protocol) or the ZooKeeper ensemble
    metadata_version: str | None  # KRaft's finalized metadata.version (its feature level); None in ZooKeeper mode
    principal: str | None  # who kts is to the cluster
    secret_check: str  # the start-up check of delegation.token.secret.key, in a few words
