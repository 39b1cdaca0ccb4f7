"""Leadership among replicas as a context that can be lost, not a flag.

kazoo's Election recipe picks one contender at a time under a znode path. While this replica leads,
``work(lost)`` runs; ``lost`` is set the moment the ZooKeeper session is SUSPENDED or LOST (another
replica may be elected as soon as our session expires, so we must assume we lost it), and ``work`` must
return promptly when it is. Then the replica contends again. ``work`` knows nothing of ZooKeeper (the
sweeper's loop in app/storage/zk/sweeper.py).

The contend loop is kept by hand rather than handed to tenacity: it is not a retry of a failing call but a
loop that runs for the life of the process (a normal return, losing the lead, contends again at once), and
its pause must end the moment ``stop()`` is called.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.exceptions import KazooException
from kazoo.protocol.states import KazooState

from app.storage.leadership import ContendingLeadership
from app.storage.zk.connection import ZkConnection

log = logging.getLogger(__name__)
RETRY_S = 1.0


class Leadership(ContendingLeadership):
    """The ``Leadership`` port by kazoo's election under ``path``; the thread's life cycle is
    ``ContendingLeadership``'s."""

    def __init__(self, zk: ZkConnection, path: str, identifier: str, work: Callable[[threading.Event], None]) -> None:
        super().__init__(path, identifier, work)
        self._zk = zk
        self._path = path
        self._election = zk.client.Election(path, identifier)

    def start(self) -> None:
        self._zk.client.add_listener(self._on_state)
        super().start()

    def _stop_contending(self) -> None:
        try:
            self._election.cancel()
        except KazooException:
            pass

    def contenders(self) -> list[str]:
        return list(self._election.contenders())

    def _on_state(self, state: KazooState) -> None:
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self._lost.set()

    def _contend(self) -> None:
        while not self._stopped.is_set():
            if not self._zk.connected:
                self._stopped.wait(RETRY_S)
                continue
            try:
                self._election.run(self._lead_if_connected)
            except Exception as exc:  # connection trouble while acquiring or releasing: contend again
                log.warning("leadership of %s interrupted: %r", self._path, exc)
                self._stopped.wait(RETRY_S)

    def _lead_if_connected(self) -> None:
        # A suspension while we waited for the lock set ``lost``; if the session survived it, the lock we
        # now hold is ours, so start afresh. If we are not connected now, give leadership up at once.
        if self._stopped.is_set() or not self._zk.connected:
            return
        self._lead()
