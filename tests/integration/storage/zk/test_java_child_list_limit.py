"""The real limit, measured: how many children of real-length names Debian's ZooKeeper Java client (the
library brokers use, default jute.maxbuffer) can list with ``ls -s`` (getChildren2, as brokers list), found
by adding and removing children on a ZooKeeper of its own; and proof that kts's guard, at the default
``zookeeper.children.max.bytes``, refuses before that count. The measured counts are printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.domain.capacity import CapacityPolicy, ChildList, Purpose
from app.domain.clock import SystemClock
from app.domain.errors import CapacityExhausted
from app.domain.token_secret import new_token_id
from app.storage.zk.capacity import CapacityGuard
from app.storage.zk.child_lists import ZkChildLists
from app.storage.zk.connection import ZkConnection
from tests.java_zookeeper_client import java_ls

BATCH = 1000  # creates per transaction: about 60 KB of request, far below ZooKeeper's own limit


@pytest.fixture(scope="module")
def own_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    """Tens of thousands of znodes: a server of its own, thrown away afterwards, not the shared one."""
    server = EmbeddedZooKeeper(Path(tmp_path_factory.mktemp("zookeeper-java-limit")))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def client(own_zookeeper: EmbeddedZooKeeper) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=own_zookeeper.connect_string)
    zk.start(10)
    for child_list in ChildList:
        zk.ensure_path(child_list.path)
    yield zk
    zk.stop()
    zk.close()


class ChildListFiller:
    """Keeps a list at a wanted number of children with names of the length Kafka writes."""

    def __init__(self, zk: KazooClient, child_list: ChildList) -> None:
        self.zk = zk
        self.child_list = child_list
        self.names: list[str] = sorted(zk.get_children(child_list.path))

    def resize(self, wanted: int) -> None:
        path = self.child_list.path
        while len(self.names) < wanted:
            count = min(BATCH, wanted - len(self.names))
            pending = [self._transaction(count) for _ in range(min(8, -(-(wanted - len(self.names)) // BATCH)))]
            for transaction in pending:
                for result in transaction.get(timeout=60):
                    if isinstance(result, Exception):
                        raise result
                    self.names.append(result.rsplit("/", 1)[1])
        surplus = self.names[wanted:]
        for start in range(0, len(surplus), BATCH):
            transaction = self.zk.transaction()
            for name in surplus[start : start + BATCH]:
                transaction.delete(f"{path}/{name}")
            transaction.commit()
        del self.names[wanted:]
        self.names.sort()
        assert self.zk.exists(path).numChildren == wanted

    def _transaction(self, count: int):  # type: ignore[no-untyped-def]
        transaction = self.zk.transaction()
        for _ in range(count):
            if self.child_list is ChildList.TOKENS:
                transaction.create(f"{self.child_list.path}/{new_token_id()}", b"")
            else:
                transaction.create(f"{self.child_list.path}/token_change_", b"", sequence=True)
        return transaction.commit_async()


@pytest.mark.parametrize("child_list", list(ChildList))
def test_java_clients_fail_to_list_past_a_count_that_kts_never_lets_the_list_reach(
    child_list: ChildList, client: KazooClient, own_zookeeper: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    filler = ChildListFiller(client, child_list)
    policy = CapacityPolicy()  # the default zookeeper.children.max.bytes
    kts_most = policy.max_entries(child_list, Purpose.REVOKE)  # the most kts lets any write (even expires) reach

    # kts's own guard, reading the real list, refuses any write at that count: creates and renews long before.
    filler.resize(kts_most)
    zk = ZkConnection(own_zookeeper.connect_string, session_timeout_ms=10_000)
    zk.start()
    try:
        guard = CapacityGuard(ZkChildLists(zk), policy, clock=SystemClock(), next_expiry_ms=lambda: None)
        with pytest.raises(CapacityExhausted):
            guard.admit_create()
        with pytest.raises(CapacityExhausted):  # an expire that only shortens a token's life is refused too
            guard.admit_expire()
    finally:
        zk.stop()
    listing = java_ls(own_zookeeper.connect_string, child_list.path)
    assert listing.listed, listing.output

    # Measure: grow until the Java client fails, then narrow down to the first count it cannot list.
    # (ZooKeeperMain 3.8 sends getChildren2 for a plain "ls" too; "-s" only prints the Stat.)
    # Live tokens count as notifications to come: creates stop where both lists together fill the notification list.
    creates_stop = min(
        policy.max_entries(child_list, Purpose.ISSUE), policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    )
    listed, failed = _first_failing_count(filler, own_zookeeper.connect_string, listed=kts_most)

    print(
        f"\n{child_list.path}: the Java client lists {listed} children (getChildren2, as brokers) and fails at "
        f"{failed} (ConnectionLoss); kts stops creates and renews at {creates_stop}, "
        f"every write at {kts_most}"
    )
    assert kts_most < failed


def _first_failing_count(filler: ChildListFiller, connect: str, *, listed: int) -> tuple[int, int]:
    """From a count the Java client lists, grow by doubling steps until it fails, then bisect: the greatest
    count it lists and the first it cannot."""
    path = filler.child_list.path
    step = 512
    while True:
        filler.resize(listed + step)
        listing = java_ls(connect, path)
        if not listing.listed:
            assert listing.connection_lost, listing.output  # what a broker sees: KeeperErrorCode = ConnectionLoss
            failed = listed + step
            break
        listed, step = listed + step, step * 4
    while failed - listed > 1:
        middle = (listed + failed) // 2
        filler.resize(middle)
        if java_ls(connect, path).listed:
            listed = middle
        else:
            failed = middle
    return listed, failed
