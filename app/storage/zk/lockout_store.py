"""Per-account locks shared by every replica: ``/kts/lockouts`` (app/storage/zk/znodes/kts.py), followed by
a children watch, and the count of live replicas (the sweeper election's contenders), followed the same way.

A lock's znode name says which account and until when, so a watch callback only parses the child list: it
never reads ZooKeeper (kazoo runs callbacks on its one event thread). The replica that publishes a lock
adds it to its own view at once; every other replica sees it when its watch fires. ZooKeeper is written
only when a lock is published or released, never per attempt.
"""

from __future__ import annotations

import logging
import threading

from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from app.domain.lockout import Lock
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import session_errors_translated
from app.storage.zk.znodes import KtsZNodes

log = logging.getLogger(__name__)

# Beyond this many published locks a replica stops publishing more (it still locks the account itself):
# an attacker spraying names must not grow the child list every replica reads on each change.
MAX_PUBLISHED_LOCKS = 5_000


class ZkLockoutStore:
    def __init__(self, zk: ZkConnection, *, service_id: str) -> None:
        self._zk = zk
        self._service_id = service_id
        self._locks: dict[str, dict[str, int]] = {}  # account key -> {znode name: until ms}
        self._count = 0
        self._replicas = 1
        self._guard = threading.Lock()

    def start(self) -> None:
        """Follow the locks and the replicas (raises StoreUnavailable when ZooKeeper cannot be read)."""
        with session_errors_translated():
            ChildrenWatch(self._zk.client, KtsZNodes.LOCKOUTS, self._on_locks)
            ChildrenWatch(self._zk.client, KtsZNodes.SWEEPER_ELECTION, self._on_contenders)

    def replicas(self) -> int:
        return self._replicas

    def locked_until(self, account: str) -> int | None:
        """The latest end of the account's published locks (expired ones included); None: none."""
        with self._guard:
            locks = self._locks.get(KtsZNodes.lockout_key(account))
            return max(locks.values()) if locks else None

    def publish(self, lock: Lock) -> None:
        """Write the lock every replica will see; raises StoreUnavailable when ZooKeeper cannot take it."""
        if self._count >= MAX_PUBLISHED_LOCKS:
            log.warning("%d account locks are published already: this one is kept by this replica only", self._count)
            return
        prefix = KtsZNodes.lockout_prefix(lock.account, lock.until_ms)
        data = KtsZNodes.encode_lockout(
            locked_at_ms=lock.locked_at_ms, until_ms=lock.until_ms, failures=lock.failures, service_id=self._service_id
        )
        self._zk.ensure_connected()
        path = self._zk.wait(
            self._zk.client.create_async(prefix, data, acl=self._zk.acl_for(KtsZNodes.LOCKOUTS), sequence=True)
        )
        name = path.rsplit("/", 1)[1]
        with self._guard:
            self._locks.setdefault(KtsZNodes.lockout_key(lock.account), {})[name] = lock.until_ms

    def release(self, account: str, *, expired_by_ms: int | None = None) -> list[int]:
        """Delete the account's locks (only those ended by ``expired_by_ms`` when given); the ends of those
        this call deleted (a lock another replica deleted first is not reported)."""
        key = KtsZNodes.lockout_key(account)
        with self._guard:
            locks = dict(self._locks.get(key, {}))
        chosen = {name: until for name, until in locks.items() if expired_by_ms is None or until <= expired_by_ms}
        if not chosen:
            return []
        self._zk.ensure_connected()
        pending = {name: self._zk.client.delete_async(f"{KtsZNodes.LOCKOUTS}/{name}") for name in chosen}
        released = []
        for name, result in pending.items():
            try:
                self._zk.wait(result)
                released.append(chosen[name])
            except NoNodeError:
                pass  # released meanwhile by another replica
            with self._guard:
                self._locks.get(key, {}).pop(name, None)
        return released

    def _on_locks(self, children: list[str]) -> None:
        locks: dict[str, dict[str, int]] = {}
        for name in children:
            parsed = KtsZNodes.lockout_name(name)
            if parsed is None:
                continue
            key, until_ms = parsed
            locks.setdefault(key, {})[name] = until_ms
        with self._guard:
            self._locks = locks
            self._count = len(children)

    def _on_contenders(self, children: list[str]) -> None:
        self._replicas = max(1, len(children))

