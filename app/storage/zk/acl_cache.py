"""Every replica's in-memory copy of the ACLs, kept current from Kafka's ACL change notifications.

An authorization check reads only the current ``AclSnapshot``; ZooKeeper is read when something changed.
Watches only wake a worker thread: kazoo runs watch callbacks on one thread that must not block on
ZooKeeper requests. The worker re-reads the resource each new notification names (present: replace
its entries; absent: drop them), exactly as a broker's authorizer does, and reloads everything after a
session expiry, when notifications may have been missed. Like brokers, it deletes notifications older
than 15 minutes.
"""

from __future__ import annotations

import logging
import threading
import time

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch

from app.domain.acl import AclSnapshot, ResourcePattern
from app.domain.errors import KtsError
from app.storage.zk import acl_codec
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.connection import ZkConnection
from app.storage.zk.paths import ACL_LITERAL_CHANGES, ACL_PREFIXED_CHANGES

log = logging.getLogger(__name__)

NOTIFICATION_RETENTION_MS = 15 * 60 * 1000
PURGE_INTERVAL_S = 60.0
_QUEUES = ((ACL_LITERAL_CHANGES, False), (ACL_PREFIXED_CHANGES, True))


class AclCache:
    def __init__(self, zk: ZkConnection, store: ZkAclStore) -> None:
        self._zk = zk
        self._store = store
        self._snapshot = AclSnapshot()
        self._lock = threading.Lock()  # serializes refreshes of the snapshot; readers never take it
        self._seen: dict[str, set[str]] = {path: set() for path, _ in _QUEUES}
        self._wake = threading.Event()
        self._reload_needed = True
        self._stopped = threading.Event()
        self._worker: threading.Thread | None = None
        self.loaded = False
        self._last_purge = time.monotonic()

    def snapshot(self) -> AclSnapshot:
        return self._snapshot

    def start(self) -> None:
        self._reload()
        self._zk.client.add_listener(self._on_state)
        for path, _ in _QUEUES:
            ChildrenWatch(self._zk.client, path, self._on_children)
        self._worker = threading.Thread(target=self._run, name="acl-cache", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=5)

    def refresh(self, pattern: ResourcePattern) -> None:
        """Re-read one resource (after our own write, so this replica reads its writes at once).

        The read happens under the lock: refreshes run one at a time, so a slow read that began before a
        newer change can never overwrite the newer entries another refresh installed."""
        with self._lock:
            entries, _ = self._store.read(pattern)
            self._snapshot = self._snapshot.replace(pattern, entries)

    def _on_state(self, state: KazooState) -> None:
        if state == KazooState.LOST:
            self._reload_needed = True  # the new session may have missed and purged notifications
        elif state == KazooState.CONNECTED:
            self._wake.set()

    def _on_children(self, _children: list[str]) -> bool:
        self._wake.set()
        return not self._stopped.is_set()  # returning False ends the watch

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(timeout=30)  # the timeout also drives the periodic purge
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                if self._reload_needed:
                    self._reload()
                else:
                    self._process_notifications()
            except KtsError as exc:  # ZooKeeper unavailable: keep serving the last snapshot, retry
                log.warning("ACL cache could not refresh: %s", exc.message)
                time.sleep(0.5)
                self._wake.set()

    def _reload(self) -> None:
        # Mark the notifications present now as seen first: any that arrive during the load are
        # processed afterwards, and re-reading a resource is harmless.
        for path, _ in _QUEUES:
            self._seen[path] = set(self._zk.wait(self._zk.client.get_children_async(path)))
        with self._lock:
            self._snapshot = AclSnapshot(self._store.load_all())
        self._reload_needed = False
        self.loaded = True
        log.info("ACL cache loaded %d ACLs", len(self._snapshot))

    def _process_notifications(self) -> None:
        now_ms = time.time_ns() // 1_000_000
        for path, prefixed in _QUEUES:
            names = set(self._zk.wait(self._zk.client.get_children_async(path)))
            for name in sorted(names - self._seen[path]):
                try:
                    data, _ = self._zk.wait(self._zk.client.get_async(f"{path}/{name}"))
                except NoNodeError:
                    continue
                try:
                    self.refresh(acl_codec.decode_change(data, prefixed=prefixed))
                except acl_codec.AclCodecError as exc:
                    log.warning("ignoring unreadable ACL change %s/%s: %s", path, name, exc)
            self._seen[path] = names
            if time.monotonic() - self._last_purge > PURGE_INTERVAL_S:
                self._purge(path, names, now_ms)
        if time.monotonic() - self._last_purge > PURGE_INTERVAL_S:
            self._last_purge = time.monotonic()

    def _purge(self, path: str, names: set[str], now_ms: int) -> None:
        """Delete notifications older than brokers keep them; another replica or a broker may race us."""
        stats = [(name, self._zk.client.exists_async(f"{path}/{name}")) for name in names]
        for name, result in stats:
            stat = self._zk.wait(result)
            if stat is not None and now_ms - stat.ctime > NOTIFICATION_RETENTION_MS:
                self._zk.client.delete_async(f"{path}/{name}")
