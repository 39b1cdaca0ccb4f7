"""The thread life cycle both leaderships share (the ``Leadership`` port, app/service/ports.py): a daemon thread
contends from ``start()`` until ``stop()``; while this replica leads, ``work(lost)`` runs with ``is_leader`` set;
``lost`` is set when the lead may be lost, at ``stop()`` and when the work returns. How a replica contends and
how it learns that the lead may be lost are the backend's: a ZooKeeper election (app/storage/zk/election.py), a
lease row in the database (app/storage/sql/leadership.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 10.0


class ContendingLeadership:
    def __init__(self, name: str, identifier: str, work: Callable[[threading.Event], None]) -> None:
        """``name``: what is led (the election's path, the lease's name), in the thread's name and the logs."""
        self._name = name
        self._identifier = identifier
        self._work = work
        self._stopped = threading.Event()
        self._lost = threading.Event()
        self._thread: threading.Thread | None = None
        self.is_leader = False

    @property
    def identifier(self) -> str:
        return self._identifier

    def start(self) -> None:
        self._thread = threading.Thread(target=self._contend, name=f"leadership:{self._name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._lost.set()
        self._stop_contending()
        if self._thread is not None:
            self._thread.join(timeout=JOIN_TIMEOUT_S)

    def _stop_contending(self) -> None:
        """Cut a wait for the lead short (the thread's own loop sees ``_stopped`` otherwise)."""

    def _contend(self) -> None:
        """The thread: contend again and again until ``_stopped``, calling ``_lead`` on each win."""
        raise NotImplementedError

    def _lead(self, term: str = "") -> None:
        """Run the work while this replica leads, the lead just won (``term``: how the logs tell this tenure from
        others). ``_began`` runs once ``is_leader`` is set, ``_ended`` once the work has returned and ``lost`` is
        set."""
        self._lost.clear()
        if self._stopped.is_set():  # stopped as the lead came: ``stop`` may have set ``lost`` before the clear
            self._lost.set()
        self.is_leader = True
        self._began()
        log.info("%s leads %s%s", self._identifier, self._name, term)
        try:
            self._work(self._lost)
        finally:
            self.is_leader = False
            self._lost.set()
            self._ended()
            log.info("%s no longer leads %s", self._identifier, self._name)

    def _began(self) -> None:
        """A tenure began (before the work starts)."""

    def _ended(self) -> None:
        """A tenure ended (the work has returned)."""
