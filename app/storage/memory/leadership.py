"""Leadership in this process alone, with the life cycle of the ZooKeeper election and the database lease
(``start()``, ``stop()``, ``is_leader``, ``work(lost)``): the in-memory backend has one replica, so it leads as
soon as it starts. Contenders given the same ``MemoryLease`` (tests that play several replicas in one process)
take turns under it, one at a time; ``stop()`` sets ``lost`` and hands the lease on at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

RETRY_S = 0.1  # after a duty that failed, as the other leaderships pause before contending again


class MemoryLease:
    """What the contenders of one process share: who holds it (None: nobody) and who waits, in arrival order."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._holder: str | None = None
        self._waiting: list[str] = []

    def acquire(self, identifier: str, stopped: threading.Event) -> bool:
        """Wait for the lease, in turn; False when ``stopped`` is set first."""
        with self._changed:
            self._waiting.append(identifier)
            try:
                while self._holder is not None or self._waiting[0] != identifier:
                    if stopped.is_set():
                        return False
                    self._changed.wait(0.1)
                if stopped.is_set():
                    return False
                self._holder = identifier
                return True
            finally:
                self._waiting.remove(identifier)
                self._changed.notify_all()

    def release(self, identifier: str) -> None:
        with self._changed:
            if self._holder == identifier:
                self._holder = None
                self._changed.notify_all()

    def contenders(self) -> list[str]:
        """The holder first, then those waiting, in turn."""
        with self._changed:
            return ([self._holder] if self._holder is not None else []) + list(self._waiting)


class MemoryLeadership:
    """``start()`` contends in a thread of its own; ``work(lost)`` runs while this replica leads."""

    def __init__(
        self, identifier: str, work: Callable[[threading.Event], None], *, lease: MemoryLease | None = None
    ) -> None:
        self._identifier = identifier
        self._work = work
        self._lease = lease if lease is not None else MemoryLease()
        self._stopped = threading.Event()
        self._lost = threading.Event()
        self._thread: threading.Thread | None = None
        self.is_leader = False

    @property
    def identifier(self) -> str:
        return self._identifier

    def start(self) -> None:
        self._thread = threading.Thread(target=self._contend, name=f"leadership:{self._identifier}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._lost.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def contenders(self) -> list[str]:
        return self._lease.contenders()

    def _contend(self) -> None:
        while not self._stopped.is_set():
            if not self._lease.acquire(self._identifier, self._stopped):
                return
            try:
                self._lead()
            except Exception:  # a duty that failed: its term ended with it; contend again
                log.exception("a duty of %s failed", self._identifier)
                self._stopped.wait(RETRY_S)

    def _lead(self) -> None:
        self._lost.clear()
        if self._stopped.is_set():  # stopped as the lease came: ``stop`` may have set ``lost`` before the clear
            self._lost.set()
        self.is_leader = True
        log.info("%s leads", self._identifier)
        try:
            self._work(self._lost)
        finally:
            self.is_leader = False
            self._lost.set()
            self._lease.release(self._identifier)
            log.info("%s no longer leads", self._identifier)
