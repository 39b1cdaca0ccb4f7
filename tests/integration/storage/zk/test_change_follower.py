"""ChangeFollower on a real ZooKeeper: each queue's handler gets every new notification's data, in order;
followers purge nothing (the leader does: test_notification_purger.py); failing handlers do not stop the
following."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest
from kazoo.client import KazooClient

from app.domain.errors import StoreUnavailable
from app.storage.zk import change_follower
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.children_list import list_children_async
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject
from app.storage.zk.multi_read import ReadResult
from app.storage.zk.transaction import ChangeTransaction
from tests.api.helpers import eventually

QUEUE_A = "/test-changes/a"
QUEUE_B = "/test-changes/b"


class Recorder:
    """A handler that records what it was given; ``fail`` decides, per call, to raise instead."""

    def __init__(self, fail: Callable[[bytes, int], Exception | None] | None = None) -> None:
        self.received: list[bytes] = []
        self.calls: list[bytes] = []
        self._fail = fail
        self._lock = threading.Lock()

    def __call__(self, data: bytes) -> None:
        with self._lock:
            self.calls.append(data)
            attempt = self.calls.count(data)
        error = self._fail(data, attempt) if self._fail is not None else None
        if error is not None:
            raise error
        with self._lock:
            self.received.append(data)


class ReloadCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def _notify(raw_zk: KazooClient, queue: str, data: bytes) -> None:
    raw_zk.create(f"{queue}/change_", data, sequence=True)


@pytest.fixture
def zk(zk_connect: str, raw_zk: KazooClient) -> Iterator[ZkConnection]:
    raw_zk.ensure_path(QUEUE_A)
    raw_zk.ensure_path(QUEUE_B)
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield connection
    connection.stop()


StartFollower = Callable[[Sequence[NotificationQueue], Callable[[], None]], ChangeFollower]


@pytest.fixture
def start_follower(zk: ZkConnection) -> Iterator[StartFollower]:
    followers: list[ChangeFollower] = []

    def start(queues: Sequence[NotificationQueue], reload: Callable[[], None]) -> ChangeFollower:
        follower = ChangeFollower(zk, queues, reload, name=f"test-follower-{len(followers)}")
        follower.start()
        followers.append(follower)
        return follower

    yield start
    for follower in followers:
        follower.stop()


def test_start_reloads_once_and_treats_notifications_already_present_as_seen(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    _notify(raw_zk, QUEUE_A, b"old-1")
    _notify(raw_zk, QUEUE_A, b"old-2")
    handler, reload = Recorder(), ReloadCounter()

    start_follower([NotificationQueue(QUEUE_A, handler)], reload)
    _notify(raw_zk, QUEUE_A, b"new")

    eventually(lambda: handler.received == [b"new"])
    assert reload.count == 1


def test_each_queues_handler_gets_every_new_notifications_data_in_order(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler_a, handler_b = Recorder(), Recorder()
    start_follower([NotificationQueue(QUEUE_A, handler_a), NotificationQueue(QUEUE_B, handler_b)], ReloadCounter())
    expected_a = [f"a-{n}".encode() for n in range(30)]
    expected_b = [f"b-{n}".encode() for n in range(10)]

    for n in range(30):
        _notify(raw_zk, QUEUE_A, expected_a[n])
        if n < 10:
            _notify(raw_zk, QUEUE_B, expected_b[n])

    eventually(lambda: len(handler_a.received) == 30 and len(handler_b.received) == 10)
    assert handler_a.received == expected_a
    assert handler_b.received == expected_b


def test_notifications_present_before_a_handled_one_are_never_handled_again(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder()
    follower = start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    _notify(raw_zk, QUEUE_A, b"first")
    eventually(lambda: handler.received == [b"first"])

    for _ in range(3):  # passes that list "first" again, as a catch-up or a late watch would
        follower.catch_up()
    _notify(raw_zk, QUEUE_A, b"second")

    eventually(lambda: b"second" in handler.received)
    assert handler.received == [b"first", b"second"]


def test_notifications_written_in_one_burst_are_handled_in_sequence_order(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder()
    start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    transaction = raw_zk.transaction()
    for n in range(12):  # sequence numbers 0..11: 10 sorts after 9 only because they are zero-padded
        transaction.create(f"{QUEUE_A}/change_", str(n).encode(), sequence=True)
    transaction.commit()

    eventually(lambda: len(handler.received) == 12)
    assert handler.received == [str(n).encode() for n in range(12)]


def test_followers_leave_old_notifications_to_the_leaders_purge(
    raw_zk: KazooClient, start_follower: StartFollower, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(change_follower, "IDLE_WAKE_S", 0.05)
    handler = Recorder()
    follower = start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())

    for n in range(3):
        _notify(raw_zk, QUEUE_A, str(n).encode())
    eventually(lambda: len(handler.received) == 3)
    passes = follower._passes
    eventually(lambda: follower._passes >= passes + 3)  # several passes saw all three

    assert len(raw_zk.get_children(QUEUE_A)) == 3
    assert handler.received == [b"0", b"1", b"2"]  # and none was handled twice


def test_a_handler_raising_an_unexpected_exception_does_not_stop_following(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder(fail=lambda data, _: ValueError("malformed") if data == b"poison" else None)
    start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())

    _notify(raw_zk, QUEUE_A, b"before")
    _notify(raw_zk, QUEUE_A, b"poison")
    _notify(raw_zk, QUEUE_A, b"after")
    eventually(lambda: handler.received == [b"before", b"after"])
    _notify(raw_zk, QUEUE_A, b"later")

    eventually(lambda: handler.received == [b"before", b"after", b"later"])
    assert handler.calls.count(b"poison") == 1  # logged and skipped, not retried


def test_a_handler_failing_with_store_unavailable_gets_the_notification_again(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder(
        fail=lambda data, attempt: StoreUnavailable("down") if data == b"flaky" and attempt == 1 else None
    )
    start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())

    _notify(raw_zk, QUEUE_A, b"flaky")
    eventually(lambda: handler.received == [b"flaky"])
    _notify(raw_zk, QUEUE_A, b"next")

    eventually(lambda: handler.received == [b"flaky", b"next"])
    assert handler.calls.count(b"flaky") == 2


def test_after_stop_no_handler_is_called(raw_zk: KazooClient, start_follower: StartFollower) -> None:
    stopped_handler, running_handler = Recorder(), Recorder()
    stopped = start_follower([NotificationQueue(QUEUE_A, stopped_handler)], ReloadCounter())
    start_follower([NotificationQueue(QUEUE_A, running_handler)], ReloadCounter())
    stopped.stop()

    _notify(raw_zk, QUEUE_A, b"after-stop")
    eventually(lambda: running_handler.received == [b"after-stop"])
    time.sleep(0.2)

    assert stopped_handler.calls == []


def test_a_session_expiry_triggers_a_reload_and_following_resumes(
    zk_connect: str, zk: ZkConnection, raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler, reload = Recorder(), ReloadCounter()
    start_follower([NotificationQueue(QUEUE_A, handler)], reload)
    assert reload.count == 1

    session_id, password = zk.client.client_id
    twin = KazooClient(hosts=zk_connect.partition("/")[0], client_id=(session_id, password))
    twin.start(10)
    twin.stop()  # closing the session from another connection expires it for ``zk``
    twin.close()

    eventually(lambda: reload.count == 2, timeout_s=10)
    _notify(raw_zk, QUEUE_A, b"after-expiry")
    eventually(lambda: handler.received == [b"after-expiry"])
    assert reload.count == 2


def test_catch_up_handles_every_notification_present_before_it_returns(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder()
    follower = start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    for n in range(20):
        _notify(raw_zk, QUEUE_A, b"change-%d" % n)
        follower.catch_up()  # no waiting for the watch: the change is handled when this returns
        assert b"change-%d" % n in handler.received


def test_concurrent_catch_ups_all_see_the_notifications_present_when_they_asked(
    raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder()
    follower = start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    missing: list[bytes] = []

    def ask(n: int) -> None:
        data = b"concurrent-%d" % n
        _notify(raw_zk, QUEUE_A, data)
        follower.catch_up()
        if data not in handler.received:
            missing.append(data)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert missing == []


def test_the_fast_listing_answers_what_kazoo_answers_and_leaves_a_watch(zk: ZkConnection, raw_zk: KazooClient) -> None:
    for n in range(40):
        _notify(raw_zk, QUEUE_A, b"%d" % n)
    raw_zk.create(f"{QUEUE_B}/short", b"")
    raw_zk.create(f"{QUEUE_B}/a-much-longer-name", b"")
    fired: list[str] = []

    for queue in (QUEUE_A, QUEUE_B):
        listed = list_children_async(zk.client, queue, lambda event: fired.append(event.path)).get(timeout=10)
        assert sorted(listed) == sorted(raw_zk.get_children(queue))
    _notify(raw_zk, QUEUE_A, b"next")

    eventually(lambda: fired == [QUEUE_A])  # chroot-relative, as kazoo's own watches report it


class CountingReads:
    """``ZkConnection.read_many`` counted: the notification reads that were not answered by the speculative read."""

    def __init__(self, zk: ZkConnection) -> None:
        self.paths: list[str] = []
        self._read_many = zk.read_many

    def __call__(self, paths: list[str]) -> list[object]:
        self.paths.extend(paths)
        return self._read_many(paths)  # type: ignore[return-value]


def test_a_single_change_is_read_with_the_listing_not_after_it(
    zk: ZkConnection, raw_zk: KazooClient, start_follower: StartFollower, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = Recorder()
    start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    _notify(raw_zk, QUEUE_A, b"first")  # the first one is read after the listing: nothing handled to guess from
    eventually(lambda: handler.received == [b"first"])
    reads = CountingReads(zk)
    monkeypatch.setattr(zk, "read_many", reads)

    for n in range(5):
        _notify(raw_zk, QUEUE_A, f"next-{n}".encode())
        eventually(lambda n=n: len(handler.received) == n + 2)

    assert handler.received == [b"first"] + [f"next-{n}".encode() for n in range(5)]
    assert reads.paths == []  # each came with its listing (the guess: the name after the last one handled)


def test_a_wrong_guess_after_the_queue_lost_a_notification_still_handles_every_change(
    zk: ZkConnection, raw_zk: KazooClient, start_follower: StartFollower, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = Recorder()
    start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    _notify(raw_zk, QUEUE_A, b"first")
    eventually(lambda: handler.received == [b"first"])
    # A purge deletes notifications, which advances the folder's sequence counter: the next name is not the guess.
    # Created and deleted in one transaction (its name is the folder's change counter), so no listing holds it.
    counter = raw_zk.exists(QUEUE_A).cversion
    transaction = raw_zk.transaction()
    transaction.create(f"{QUEUE_A}/change_", b"never-seen", sequence=True)
    transaction.delete(f"{QUEUE_A}/change_{counter:010d}")
    assert not any(isinstance(result, Exception) for result in transaction.commit())
    reads = CountingReads(zk)
    monkeypatch.setattr(zk, "read_many", reads)

    _notify(raw_zk, QUEUE_A, b"after-the-gap")
    eventually(lambda: b"after-the-gap" in handler.received)
    _notify(raw_zk, QUEUE_A, b"then")
    eventually(lambda: b"then" in handler.received)

    assert handler.received == [b"first", b"after-the-gap", b"then"]
    assert len(reads.paths) >= 1  # the notification after the gap was read on its own


def test_a_burst_is_handled_whole_with_the_guessed_one_first(
    zk: ZkConnection, raw_zk: KazooClient, start_follower: StartFollower
) -> None:
    handler = Recorder()
    follower = start_follower([NotificationQueue(QUEUE_A, handler)], ReloadCounter())
    _notify(raw_zk, QUEUE_A, b"first")
    eventually(lambda: handler.received == [b"first"])
    transaction = raw_zk.transaction()
    for n in range(20):
        transaction.create(f"{QUEUE_A}/change_", f"burst-{n}".encode(), sequence=True)
    transaction.commit()
    follower.catch_up()

    eventually(lambda: len(handler.received) == 21)
    assert handler.received == [b"first"] + [f"burst-{n}".encode() for n in range(20)]


def test_notifications_this_session_wrote_are_handled_without_being_read_back_and_others_still_are(
    zk: ZkConnection, raw_zk: KazooClient, start_follower: StartFollower, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    read_many = zk.read_many

    def spying(paths: list[str]) -> list[ReadResult]:
        read.extend(paths)
        return read_many(paths)

    monkeypatch.setattr(zk, "read_many", spying)
    monkeypatch.setattr(change_follower, "next_name", lambda latest: None)  # no speculative read either
    recorder = Recorder()
    follower = start_follower([NotificationQueue(QUEUE_A, recorder)], ReloadCounter())

    def own(data: bytes) -> None:
        # The follower's pass waits for the commit to return: a listing in the instant between the commit and its
        # results (the watch fires first) would read the notification, which is correct but not what this shows.
        with follower._pass_lock:
            transaction = ChangeTransaction(zk)
            transaction.notify(f"{QUEUE_A}/change_", data)
            transaction.commit(Subject("a test", "test"))

    own(b"own-1")
    _notify(raw_zk, QUEUE_A, b"other-1")  # another writer's, between two of this session's
    own(b"own-2")
    _notify(raw_zk, QUEUE_A, b"other-2")

    eventually(lambda: len(recorder.received) == 4)
    assert recorder.received == [b"own-1", b"other-1", b"own-2", b"other-2"]  # every one, in order
    names = sorted(raw_zk.get_children(QUEUE_A))
    assert sorted(read) == [f"{QUEUE_A}/{names[1]}", f"{QUEUE_A}/{names[3]}"]  # only the other writer's

    _notify(raw_zk, QUEUE_A, b"other-3")  # and following goes on past them
    eventually(lambda: recorder.received[-1:] == [b"other-3"])
