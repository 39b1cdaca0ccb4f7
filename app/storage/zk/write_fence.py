"""The check every write of Kafka's metadata carries in ZooKeeper mode: a Protocol the session holds
(``ZkConnection.write_fence``) and transactions consult (transaction.py); the cluster watch implements it
(cluster_watch.py)."""

from __future__ import annotations

from typing import Protocol


class WriteFence(Protocol):
    def admit(self) -> tuple[str, int] | None:
        """Raise ClusterMigrating when Kafka's metadata must not be written here; else the ``(path, version)``
        every write must find unchanged (None: nothing to check yet)."""
        ...

    def breached(self) -> None:
        """The checked znode changed: read the cluster again, and raise ClusterMigrating if it now refuses."""
        ...
