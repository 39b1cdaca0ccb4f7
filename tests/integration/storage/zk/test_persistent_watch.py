"""Persistent recursive watches on the suite's real ZooKeeper (3.8): each znode created under a registered folder
is announced by name, in commit order, with no listing; a change follower registers again after a dropped
connection or an expired session, and follows by listing where the server refuses the request; a notification
written by the Java client brokers use is seen like any other."""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import UnimplementedError
from kazoo.protocol.connection import _CONNECTION_DROP

from app.cli.server.embedded_zookeeper import JAVA_DIR
from app.domain.errors import StoreUnavailable
from app.storage.zk import change_follower, persistent_watch
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.connection import ZkConnection
from app.storage.zk.persistent_watch import created_children
from tests.api.helpers import eventually
from tests.java_zookeeper_client import CLIENT_JARS, MAIN_CLASS

QUEUE = "/test-watched/changes"
OTHER = "/test-watched/other"


class Announced:
    """A sink recording the names announced (kazoo's reader thread calls it)."""

    def __init__(self) -> None:
        self.names: list[str | None] = []
        self._lock = threading.Lock()

    def __call__(self, name: str | None) -> None:
        with self._lock:
            self.names.append(name)


class Listings:
    """``list_children_async`` as the follower calls it, counted."""

    def __init__(self) -> None:
        self.count = 0
        self._list = change_follower.list_children_async

    def __call__(self, *args: Any) -> Any:
        self.count += 1
        return self._list(*args)


@pytest.fixture
def zk(zk_connect: str, raw_zk: KazooClient) -> Iterator[ZkConnection]:
    raw_zk.ensure_path(QUEUE)
    raw_zk.ensure_path(OTHER)
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield connection
    connection.stop()


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Listings:
    counted = Listings()
    monkeypatch.setattr(change_follower, "list_children_async", counted)
    return counted


@pytest.fixture
def received(zk: ZkConnection) -> Iterator[tuple[list[bytes], ChangeFollower]]:
    got: list[bytes] = []
    follower = ChangeFollower(zk, [NotificationQueue(QUEUE, got.append)], lambda: None, name="watched-follower")
    follower.start()
    yield got, follower
    follower.stop()


def _notify(raw_zk: KazooClient, data: bytes, queue: str = QUEUE) -> str:
    return str(raw_zk.create(f"{queue}/change_", data, sequence=True)).rpartition("/")[2]


def test_each_child_created_after_registration_is_announced_by_name_in_commit_order(
    zk: ZkConnection, raw_zk: KazooClient
) -> None:
    before = _notify(raw_zk, b"before")
    watches = created_children(zk.client)
    announced, elsewhere = Announced(), Announced()
    watches.add(QUEUE, announced)
    watches.add(OTHER, elsewhere)
    zk.wait(watches.register_async(QUEUE))

    names = [_notify(raw_zk, b"%d" % n) for n in range(5)]
    transaction = raw_zk.transaction()
    for _ in range(12):
        transaction.create(f"{QUEUE}/change_", b"burst", sequence=True)
    burst = [str(path).rpartition("/")[2] for path in transaction.commit()]
    raw_zk.set(f"{QUEUE}/{names[0]}", b"changed")  # data changes and deletions announce nothing
    raw_zk.delete(f"{QUEUE}/{before}")
    last = _notify(raw_zk, b"last")

    eventually(lambda: announced.names[-1:] == [last])
    assert announced.names == [*names, *burst, last]
    assert elsewhere.names == []  # registered with a sink, but no watch on it: nothing is announced


def test_a_server_without_persistent_watches_refuses_as_zookeeper_before_3_6_does(
    zk: ZkConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ZooKeeper 3.5 answers the AddWatch opcode, which it does not know, as 3.8 answers any opcode it does not know.
    monkeypatch.setattr(persistent_watch, "ADD_WATCH_OPCODE", 999)
    with pytest.raises(UnimplementedError):
        created_children(zk.client).register_async(QUEUE).get(timeout=30)
    # and it closes the connection, as 3.5 does too: the session goes on over the next one kazoo opens

    def readable() -> bool:
        try:
            return zk.get(QUEUE) is not None
        except StoreUnavailable:
            return False

    eventually(readable)


def test_the_follower_handles_changes_without_listing_once_started(
    raw_zk: KazooClient, listings: Listings, received: tuple[list[bytes], ChangeFollower]
) -> None:
    got, _ = received
    started_with = listings.count
    for n in range(10):
        _notify(raw_zk, b"change-%d" % n)
    eventually(lambda: len(got) == 10)
    assert got == [b"change-%d" % n for n in range(10)]
    assert listings.count == started_with


def _drop_connection(zk: ZkConnection) -> None:
    zk.client._call(_CONNECTION_DROP, zk.client.handler.async_result())  # kazoo's own test hook


def test_after_a_dropped_connection_the_watch_is_registered_again_and_missed_changes_listed_once(
    zk: ZkConnection, raw_zk: KazooClient, listings: Listings, received: tuple[list[bytes], ChangeFollower]
) -> None:
    got, follower = received
    _notify(raw_zk, b"first")
    eventually(lambda: got == [b"first"])
    reconnected = threading.Event()
    zk.client.add_listener(lambda state: reconnected.set() if state == "CONNECTED" else None)

    with follower._pass_lock:  # the follower cannot pass while the connection is down and changes are made
        _drop_connection(zk)
        eventually(lambda: reconnected.is_set())
        _notify(raw_zk, b"while-away")  # on the server, its event goes nowhere: the watch left with the connection
    eventually(lambda: got[-1:] == [b"while-away"])  # found by the one listing after the reconnection
    listed = listings.count
    for n in range(5):
        _notify(raw_zk, b"after-%d" % n)
    eventually(lambda: len(got) == 7)

    assert got == [b"first", b"while-away"] + [b"after-%d" % n for n in range(5)]
    assert listings.count == listed  # announced by the watch registered again, not listed


def test_after_an_expired_session_the_follower_reloads_and_follows_by_watch_again(
    zk_connect: str, zk: ZkConnection, raw_zk: KazooClient, listings: Listings
) -> None:
    got: list[bytes] = []
    reloads: list[int] = []
    follower = ChangeFollower(
        zk, [NotificationQueue(QUEUE, got.append)], lambda: reloads.append(1), name="expiring-follower"
    )
    follower.start()
    try:
        session_id, password = zk.client.client_id
        twin = KazooClient(hosts=zk_connect.partition("/")[0], client_id=(session_id, password))
        twin.start(30)
        twin.stop()  # closing the session from another connection expires it for ``zk``
        twin.close()
        eventually(lambda: len(reloads) == 2)
        listed = listings.count
        for n in range(5):
            _notify(raw_zk, b"after-expiry-%d" % n)
        eventually(lambda: len(got) == 5)
        assert got == [b"after-expiry-%d" % n for n in range(5)]
        assert listings.count == listed
    finally:
        follower.stop()


def test_where_the_server_refuses_the_follower_lists_after_each_change_and_says_so_once(
    zk: ZkConnection, raw_zk: KazooClient, listings: Listings, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setattr(persistent_watch, "ADD_WATCH_OPCODE", 999)  # answered UNIMPLEMENTED, as by ZooKeeper 3.5
    caplog.set_level(logging.WARNING, logger=change_follower.__name__)
    got_a: list[bytes] = []
    got_b: list[bytes] = []
    followers = [
        ChangeFollower(zk, [NotificationQueue(QUEUE, got.append)], lambda: None, name=f"listing-follower-{n}")
        for n, got in enumerate((got_a, got_b))
    ]
    for follower in followers:
        follower.start()
    try:
        for n in range(5):
            _notify(raw_zk, b"change-%d" % n)
            eventually(lambda n=n: len(got_a) == n + 1 and len(got_b) == n + 1)
        assert got_a == got_b == [b"change-%d" % n for n in range(5)]
        assert listings.count >= 2 * 5  # a listing per change and follower: the one-shot watches of before
        refusals = [record for record in caplog.records if "no persistent watches" in record.getMessage()]
        assert len(refusals) == 1
    finally:
        for follower in followers:
            follower.stop()


def test_purged_notifications_announce_nothing_and_following_goes_on(
    raw_zk: KazooClient, listings: Listings, received: tuple[list[bytes], ChangeFollower]
) -> None:
    got, _ = received
    names = [_notify(raw_zk, b"%d" % n) for n in range(3)]
    eventually(lambda: len(got) == 3)
    for name in names:  # the leader's purge
        raw_zk.delete(f"{QUEUE}/{name}")
    transaction = raw_zk.transaction()  # and one purged before any follower could read it
    counter = raw_zk.exists(QUEUE).cversion
    transaction.create(f"{QUEUE}/change_", b"gone", sequence=True)
    transaction.delete(f"{QUEUE}/change_{counter:010d}")
    transaction.commit()
    _notify(raw_zk, b"after-purge")

    eventually(lambda: got[-1:] == [b"after-purge"])
    assert got == [b"0", b"1", b"2", b"after-purge"]


def _java_create_sequential(connect: str, prefix: str, data: str) -> None:
    """A persistent sequential znode created by the ZooKeeper Java client, as a broker creates its notifications."""
    classpath = ":".join(str(JAVA_DIR / jar) for jar in CLIENT_JARS)
    command = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classpath, MAIN_CLASS, "-server", connect]
    done = subprocess.run([*command, "create", "-s", prefix, data], capture_output=True, text=True, timeout=180)
    assert "Created" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_notification_a_broker_writes_is_announced_and_handled(
    zk_connect: str, raw_zk: KazooClient, listings: Listings, received: tuple[list[bytes], ChangeFollower]
) -> None:
    got, _ = received
    listed = listings.count
    _java_create_sequential(zk_connect, f"{QUEUE}/change_", "from-a-broker")
    _notify(raw_zk, b"from-kazoo")

    eventually(lambda: len(got) == 2, timeout_s=60)
    assert got == [b"from-a-broker", b"from-kazoo"]
    assert listings.count == listed
