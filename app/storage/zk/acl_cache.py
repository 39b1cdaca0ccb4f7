"""Every replica's in-memory copy of the ACLs, kept current from Kafka's ACL change notifications.

An authorization check reads only the current ``AclSnapshot``; ZooKeeper is read when something changed:
each notification names a resource, which is re-read (present: replace its entries; absent: drop them),
exactly as a broker's authorizer does.
"""

from __future__ import annotations

import logging
import threading

from app.domain.acl import AclSnapshot, PatternType, ResourcePattern
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import AclChangeZNode, MalformedZNode

log = logging.getLogger(__name__)


class AclCache:
    def __init__(self, zk: ZkConnection, store: ZkAclStore) -> None:
        self._store = store
        self._snapshot = AclSnapshot()
        self._lock = threading.Lock()  # serializes refreshes of the snapshot; readers never take it
        self.loaded = False
        self._follower = ChangeFollower(
            zk,
            [
                NotificationQueue(AclChangeZNode.LITERAL_ROOT, self._on_literal_change),
                NotificationQueue(AclChangeZNode.PREFIXED_ROOT, self._on_prefixed_change),
            ],
            self._reload,
            name="acl-cache",
        )

    def snapshot(self) -> AclSnapshot:
        return self._snapshot

    def start(self) -> None:
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def refresh(self, pattern: ResourcePattern) -> None:
        """Re-read one resource (after our own write, so this replica reads its writes at once).

        The read happens under the lock: refreshes run one at a time, so a slow read that began before a
        newer change can never overwrite the newer entries another refresh installed."""
        with self._lock:
            entries, _ = self._store.read(pattern)
            self._snapshot = self._snapshot.replace(pattern, entries)

    def _on_literal_change(self, data: bytes) -> None:
        self._on_change(data, PatternType.LITERAL)

    def _on_prefixed_change(self, data: bytes) -> None:
        self._on_change(data, PatternType.PREFIXED)

    def _on_change(self, data: bytes, queue: PatternType) -> None:
        try:
            pattern = AclChangeZNode.decode(data, queue)
        except MalformedZNode as exc:
            log.warning("ignoring unreadable ACL change notification: %s", exc)
            return
        self.refresh(pattern)

    def _reload(self) -> None:
        with self._lock:
            self._snapshot = AclSnapshot(self._store.load_all())
        self.loaded = True
        log.info("ACL cache loaded %d ACLs", len(self._snapshot))
