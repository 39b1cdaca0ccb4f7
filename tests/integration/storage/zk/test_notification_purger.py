"""NotificationPurger on a real ZooKeeper: notifications older than the retention go, younger ones stay, and
the purge runs while its leadership lasts and stops when it is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from app.storage.zk.connection import ZkConnection
from app.storage.zk.notification_purger import NotificationPurger
from tests.api.helpers import eventually

QUEUE = "/delegation_token/token_changes"
OTHER = "/kafka-acl-changes"
RETENTION_MS = 15 * 60 * 1000


@pytest.fixture
def zk(zk_connect: str, raw_zk: KazooClient) -> Iterator[ZkConnection]:
    raw_zk.ensure_path(QUEUE)
    raw_zk.ensure_path(OTHER)
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield connection
    connection.stop()


def _notify(raw_zk: KazooClient, queue: str, count: int) -> list[str]:
    return [raw_zk.create(f"{queue}/change_", b"x", sequence=True).rsplit("/", 1)[1] for _ in range(count)]


def test_notifications_older_than_the_retention_go_and_younger_ones_stay(raw_zk: KazooClient, zk: ZkConnection) -> None:
    old = [f"{QUEUE}/{name}" for name in _notify(raw_zk, QUEUE, 3)]
    old += [f"{OTHER}/{name}" for name in _notify(raw_zk, OTHER, 2)]
    newest_old_ctime = max(raw_zk.exists(path).ctime for path in old)
    time.sleep(0.05)  # so the next notifications are created at a later millisecond
    young = _notify(raw_zk, QUEUE, 2)
    assert min(raw_zk.exists(f"{QUEUE}/{name}").ctime for name in young) > newest_old_ctime
    # "now" is 15 minutes after the old ones, so they are past the retention and the young ones are not
    purger = NotificationPurger(zk, [QUEUE, OTHER], now_ms=lambda: newest_old_ctime + RETENTION_MS + 1)

    assert purger.purge() == 5
    assert sorted(raw_zk.get_children(QUEUE)) == young
    assert raw_zk.get_children(OTHER) == []
    assert purger.purge() == 0  # nothing more is old enough
    assert purger.purged_total == 5


def test_a_purge_walks_past_many_chunks_of_old_notifications(raw_zk: KazooClient, zk: ZkConnection) -> None:
    transaction = raw_zk.transaction()
    for _ in range(1200):  # more than two chunks of 500
        transaction.create(f"{QUEUE}/token_change_", b"x", sequence=True)
    transaction.commit()
    purger = NotificationPurger(zk, [QUEUE], now_ms=lambda: time.time_ns() // 1_000_000 + RETENTION_MS + 60_000)

    assert purger.purge() == 1200
    assert raw_zk.get_children(QUEUE) == []


def test_no_purge_while_the_cluster_refuses_writes(raw_zk: KazooClient, zk: ZkConnection) -> None:
    """The cluster migrating to KRaft (app/storage/zk/cluster_watch.py): kts writes nothing, purges included."""
    _notify(raw_zk, QUEUE, 3)
    allowed = [False]
    later = time.time_ns() // 1_000_000 + RETENTION_MS + 60_000
    purger = NotificationPurger(zk, [QUEUE], now_ms=lambda: later, writes_allowed=lambda: allowed[0])

    assert purger.purge() == 0
    assert len(raw_zk.get_children(QUEUE)) == 3
    allowed[0] = True
    assert purger.purge() == 3


def test_the_purge_runs_while_leading_and_stops_when_leadership_is_lost(raw_zk: KazooClient, zk: ZkConnection) -> None:
    purger = NotificationPurger(
        zk, [QUEUE], now_ms=lambda: time.time_ns() // 1_000_000 + RETENTION_MS + 60_000, interval_s=0.05
    )
    lost = threading.Event()
    leading = threading.Thread(target=purger.run, args=(lost,))
    leading.start()
    try:
        _notify(raw_zk, QUEUE, 2)
        eventually(lambda: raw_zk.get_children(QUEUE) == [])
    finally:
        lost.set()
        leading.join(timeout=10)
    assert not leading.is_alive()
    assert purger.purged_total == 2
