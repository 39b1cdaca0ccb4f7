"""Following change notifications the way brokers do, for every in-memory cache kts keeps.

A cache registers one handler per notification queue (a persistent-sequential znode folder such as
``/delegation_token/token_changes``). Watches only wake a worker thread, because kazoo runs watch
callbacks on a single thread that must not block on ZooKeeper requests. The worker hands each new
notification's data to its queue's handler, in order, and after a session expiry (when notifications may
have been missed and purged) marks what exists as seen and asks the cache to reload everything. It does not
delete old notifications: the elected leader does (notification_purger.py).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch

from app.domain.errors import KtsError, StoreUnavailable
from app.storage.zk.connection import ZkConnection
from app.storage.zk.multi_read import ReadResult

log = logging.getLogger(__name__)

IDLE_WAKE_S = 30.0


def _data(answer: ReadResult) -> bytes:
    if isinstance(answer, Exception):
        raise StoreUnavailable(f"ZooKeeper refused to read a notification: {type(answer).__name__}.")
    return answer[0]


@dataclass(frozen=True)
class NotificationQueue:
    path: str
    handle: Callable[[bytes], None]  # called with a notification's data; may read ZooKeeper
    # When given, called once with the data of all new notifications, in order, instead of ``handle``:
    # lets a cache pipeline its reads for a burst of changes.
    handle_batch: Callable[[list[bytes]], None] | None = None


class ChangeFollower:
    def __init__(
        self, zk: ZkConnection, queues: Sequence[NotificationQueue], reload: Callable[[], None], *, name: str
    ) -> None:
        self._zk = zk
        self._queues = list(queues)
        self._reload = reload
        self._name = name
        self._seen: dict[str, set[str]] = {queue.path: set() for queue in self._queues}
        # The children each watch delivered last: the watch recipe lists them anyway, listing them again
        # would double the cost of every notification (the list holds up to 15 minutes of them).
        self._listed: dict[str, list[str]] = {}
        # The greatest notification name seen in each queue. Names carry ZooKeeper's zero-padded sequence
        # number, so they sort in creation order, and a delivered list whose greatest name is below this one
        # was listed before a listing already handled: it is stale.
        self._latest: dict[str, str] = {}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._reload_needed = False
        self._worker: threading.Thread | None = None
        # One pass at a time, from the worker or from a request catching up; ``_passes`` counts them.
        self._pass_lock = threading.Lock()
        self._passes = 0

    def start(self) -> None:
        """Load everything, then follow. Raises StoreUnavailable if the first load cannot be done."""
        self._load()
        self._zk.client.add_listener(self._on_state)
        for queue in self._queues:
            ChildrenWatch(self._zk.client, queue.path, functools.partial(self._on_children, queue.path))
        self._worker = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._worker.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=5)

    def _on_state(self, state: KazooState) -> None:
        if state == KazooState.LOST:
            self._reload_needed = True
        elif state == KazooState.CONNECTED:
            self._wake.set()

    def _on_children(self, path: str, children: list[str]) -> bool:
        self._listed[path] = children
        self._wake.set()
        return not self._stopped.is_set()  # False ends the watch

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(timeout=IDLE_WAKE_S)
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                with self._pass_lock:
                    self._pass(listed=True)
            except KtsError as exc:  # ZooKeeper away: keep serving what we have, try again shortly
                log.warning("%s could not refresh: %s", self._name, exc.message)
                time.sleep(0.5)
                self._wake.set()

    def catch_up(self) -> None:
        """Handle every notification that exists now before returning, for a request that may have missed a
        change made elsewhere an instant ago (its watch event may still be on the way). Concurrent callers
        share passes: one that began after the call is enough."""
        asked = self._passes
        with self._pass_lock:
            if self._passes >= asked + 2:  # the pass running at the call, then a whole one after it
                return
            self._zk.sync()  # the change may have been acknowledged by another server a moment ago
            self._pass(listed=False)

    def _pass(self, *, listed: bool) -> None:
        if self._reload_needed:
            self._load()
        else:
            self._follow(listed=listed)
        self._passes += 1

    def _load(self) -> None:
        # Mark the notifications present now as seen first: any that arrive during the load are handled
        # afterwards, and handling a change twice is harmless.
        self._zk.ensure_connected()
        for queue in self._queues:
            self._seen[queue.path] = set(self._list(queue.path))
            self._note_latest(queue.path, self._seen[queue.path])
        self._reload()
        self._reload_needed = False

    def _follow(self, *, listed: bool) -> None:
        """``listed``: use the children the watch delivered when it did (else list them now)."""
        for queue in self._queues:
            delivered = self._listed.pop(queue.path, None)  # dropped when listing anew: it may be older
            if not listed or (delivered is not None and self._stale(queue.path, delivered)):
                # A watch's list can arrive after this worker listed the queue anew (when it caught up, or
                # found nothing delivered for this queue): taking it would forget names seen since, and
                # handle them again later.
                delivered = None
            names = set(delivered if delivered is not None else self._list(queue.path))
            self._note_latest(queue.path, names)
            fresh = sorted(names - self._seen[queue.path])
            batch = [
                (name, data)
                for name, data in zip(fresh, self._read(queue.path, fresh), strict=True)
                if data is not None  # purged already
            ]
            if queue.handle_batch is not None and batch:
                try:
                    queue.handle_batch([data for _, data in batch])
                    batch = []
                except KtsError:
                    raise
                except Exception:  # find the notification at fault by handling them one at a time
                    log.exception("%s could not handle a batch of notifications; one at a time now", self._name)
            for name, data in batch:
                try:
                    queue.handle(data)
                except KtsError:
                    raise
                except Exception:  # a malformed notification must not stop the cache
                    log.exception("%s could not handle notification %s/%s", self._name, queue.path, name)
            self._seen[queue.path] = names

    def _stale(self, path: str, delivered: list[str]) -> bool:
        latest = self._latest.get(path)
        return latest is not None and (not delivered or max(delivered) < latest)

    def _note_latest(self, path: str, names: set[str]) -> None:
        top = max(names, default="")
        if top > self._latest.get(path, ""):
            self._latest[path] = top

    def _list(self, path: str) -> list[str]:
        return list(self._zk.wait(self._zk.client.get_children_async(path)))

    def _read(self, path: str, names: list[str]) -> list[bytes | None]:
        """The data of several notifications (None for those already purged), in few round trips."""
        answers = self._zk.read_many([f"{path}/{name}" for name in names])
        return [None if isinstance(answer, NoNodeError) else _data(answer) for answer in answers]
