"""Following the cluster's controller, so kts stops writing Kafka's metadata the moment a KRaft controller takes the
cluster over (app/domain/cluster_migration.py says what the znodes mean).

The watch reads ``/controller_epoch``'s version first, then ``/controller``, ``/migration``, ``/cluster/id`` and
the brokers registered under ``/brokers/ids``, and judges. ZooKeeper watches on those znodes (and a reading every
``recheck_s`` as a safety net) only wake a worker thread that reads again, as watch callbacks must not block;
a change is seen within a round trip or two. The phase is logged once, when it changes.

It is also the write fence of every Kafka-metadata transaction (``WriteFence`` in write_fence.py): ``admit``
refuses at once when the cluster refuses writes, and otherwise hands out the ``/controller_epoch`` version read
while the cluster was in ZooKeeper mode, which the transaction checks atomically with its writes. A KRaft
controller claims the cluster by changing that znode in the same transaction as ``/controller``, before it reads
any token, so a write either commits before the claim (and is copied into KRaft) or fails as a whole. A
ZooKeeper-mode controller election also changes the version: ``breached`` reads again and lets the transaction
retry with the new one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState

from app.domain.cluster_migration import ClusterState, ClusterView, judge
from app.domain.errors import KtsError
from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import (
    BrokerIdsZNode,
    ClusterIdZNode,
    ControllerEpochZNode,
    ControllerZNode,
    MalformedZNode,
    MigrationZNode,
)

log = logging.getLogger(__name__)
RECHECK_S: Final = 10.0
T = TypeVar("T")


class ClusterWatch:
    def __init__(self, zk: ZkConnection, *, recheck_s: float = RECHECK_S) -> None:
        self._zk = zk
        self._recheck_s = recheck_s
        self._state: ClusterState | None = None
        self._refreshing = threading.Lock()  # one reading installed at a time, so an older one never wins
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> ClusterState:
        """The latest judgement (read once now if there is none yet)."""
        state = self._state
        return state if state is not None else self.refresh()

    def start(self) -> None:
        self.refresh()
        self._zk.client.add_listener(self._on_session)
        self._thread = threading.Thread(target=self._run, name="cluster-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._zk.client.remove_listener(self._on_session)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def refresh(self) -> ClusterState:
        """Read the cluster's znodes now, judge, and install the result."""
        with self._refreshing:
            state = judge(self.read())
            previous, self._state = self._state, state
        if previous is None or previous.phase != state.phase:
            if state.writes_allowed:
                log.info("Kafka cluster: %s (%s)", state.phase, state.reason)
            else:
                log.warning(
                    "Kafka cluster: %s (%s); kts refuses to write tokens, ACLs and user credentials from now on: "
                    "switch it to the Kafka protocol with bootstrap.servers",
                    state.phase,
                    state.reason,
                )
        return state

    def read(self) -> ClusterView:
        """The cluster's znodes, ``/controller_epoch`` strictly first (see ClusterView), each watched."""
        zk, client = self._zk, self._zk.client
        zk.ensure_connected()
        epoch = zk.wait(client.exists_async(ControllerEpochZNode.PATH, watch=self._on_watch))
        watched = (ControllerZNode.PATH, MigrationZNode.PATH)
        # A data or child watch needs the znode; exists() also watches for its creation (/brokers/ids included:
        # the first broker's registration must wake the watch, not wait for the next reading).
        for path in (*watched, BrokerIdsZNode.PATH):
            client.exists_async(path, watch=self._on_watch)
        reads = {path: client.get_async(path) for path in (*watched, ClusterIdZNode.PATH)}
        brokers = client.get_children_async(BrokerIdsZNode.PATH, watch=self._on_watch)
        data = {path: self._data(result) for path, result in reads.items()}
        unreadable: list[str] = []
        controller = _decoded(ControllerZNode.decode, data[ControllerZNode.PATH], ControllerZNode.PATH, unreadable)
        migration = _decoded(MigrationZNode.decode, data[MigrationZNode.PATH], MigrationZNode.PATH, unreadable)
        cluster_id = _decoded(ClusterIdZNode.decode, data[ClusterIdZNode.PATH], ClusterIdZNode.PATH, [])
        try:
            registered = len(zk.wait(brokers))
        except NoNodeError:
            registered = 0
        return ClusterView(
            controller_epoch_version=None if epoch is None else epoch.version,
            controller=controller,
            migration=migration,
            zookeeper_brokers=registered,
            cluster_id=cluster_id,
            unreadable=tuple(unreadable),
        )

    # The write fence (transaction.py).

    def admit(self) -> tuple[str, int] | None:
        state = self.state
        if not state.writes_allowed:
            raise state.refusal()
        version = state.fence_version
        return None if version is None else (ControllerEpochZNode.PATH, version)

    def breached(self) -> None:
        state = self.refresh()
        if not state.writes_allowed:
            log.warning("a write in flight when the cluster's controller changed was not made: %s", state.reason)
            raise state.refusal()

    def _data(self, result: Any) -> bytes | None:
        try:
            data, _ = self._zk.wait(result)
        except NoNodeError:
            return None
        return bytes(data)

    def _on_watch(self, _event: object) -> None:
        self._wake.set()  # on kazoo's event thread: never block here

    def _on_session(self, state: KazooState) -> None:
        if state == KazooState.CONNECTED:
            self._wake.set()  # watches may have been lost with an expired session: read again

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(self._recheck_s)
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                self.refresh()
            except KtsError as exc:
                log.debug("cluster watch postponed: %s", exc.message)


def _decoded(decode: Callable[[bytes], T], data: bytes | None, path: str, unreadable: list[str]) -> T | None:
    """The decoded znode, None when absent; an unreadable one is named in ``unreadable`` (the judgement's
    reason names it, so it is logged once, not at every reading)."""
    if data is None:
        return None
    try:
        return decode(data)
    except MalformedZNode:
        unreadable.append(path)
        return None
