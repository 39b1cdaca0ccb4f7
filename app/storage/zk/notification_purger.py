"""Deleting change notifications older than brokers keep them (15 minutes), as a broker's
``ZkNodeChangeNotificationListener`` does, but from the elected leader only: one replica walking the lists is
enough, and the capacity guard (app/storage/zk/capacity.py) counts on the purge to make room.

Names carry ZooKeeper's zero-padded sequence number, so sorted names are in creation order: the walk starts at
the oldest and stops at the first chunk holding a notification young enough to keep, so a purge reads the
Stat of the notifications it deletes plus one chunk, not of the whole list.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from app.domain.capacity import NOTIFICATION_RETENTION_MS
from app.domain.errors import KtsError
from app.storage.zk.connection import ZkConnection

log = logging.getLogger(__name__)
PURGE_INTERVAL_S = 60.0
CHUNK = 500


class NotificationPurger:
    def __init__(
        self,
        zk: ZkConnection,
        queues: Sequence[str],
        *,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        interval_s: float = PURGE_INTERVAL_S,
        retention_ms: int = NOTIFICATION_RETENTION_MS,
        writes_allowed: Callable[[], bool] = lambda: True,
    ) -> None:
        self._zk = zk
        self._writes_allowed = writes_allowed
        self._queues = list(queues)
        self._now_ms = now_ms
        self._interval_s = interval_s
        self._retention_ms = retention_ms
        self.purged_total = 0

    def run(self, lost: threading.Event) -> None:
        """The leader's loop: purge at once, then every interval, until leadership is lost."""
        while not lost.is_set():
            try:
                self.purge()
            except KtsError as exc:
                log.warning("notification purge interrupted: %s", exc.message)
            if lost.wait(self._interval_s):
                return

    def purge(self) -> int:
        """Delete every notification older than the retention; returns how many were deleted. None while the
        cluster refuses kts's writes (its migration to KRaft: app/storage/zk/cluster_watch.py)."""
        if not self._writes_allowed():
            return 0
        deleted = sum(self._purge(path) for path in self._queues)
        self.purged_total += deleted
        if deleted:
            log.info("purged %d change notifications older than %d s", deleted, self._retention_ms // 1000)
        return deleted

    def _purge(self, path: str) -> int:
        self._zk.ensure_connected()
        try:
            names = sorted(self._zk.wait(self._zk.client.get_children_async(path)))
        except NoNodeError:
            return 0
        cutoff = self._now_ms() - self._retention_ms
        deleted = 0
        for start in range(0, len(names), CHUNK):
            chunk = [f"{path}/{name}" for name in names[start : start + CHUNK]]
            stats = [self._zk.client.exists_async(child) for child in chunk]
            old = [child for child, result in zip(chunk, stats, strict=True) if _older(self._zk.wait(result), cutoff)]
            deletions = [self._zk.client.delete_async(child) for child in old]
            for result in deletions:
                try:
                    self._zk.wait(result)
                    deleted += 1
                except NoNodeError:  # a broker or the previous leader purged it first
                    pass
            if len(old) < len(chunk):
                break  # the rest are younger
        return deleted


def _older(stat: ZnodeStat | None, cutoff_ms: int) -> bool:
    return stat is not None and stat.ctime < cutoff_ms
