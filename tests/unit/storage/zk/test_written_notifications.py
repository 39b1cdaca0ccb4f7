"""A follower told of a notification before its commit's answer settles first: it waits for this session's
commits in flight, and not at all when none is; followers waiting for different commits are each woken once theirs
are answered."""

from __future__ import annotations

import threading

from app.storage.zk.written_notifications import WrittenNotifications
from tests.api.helpers import eventually


def test_with_no_commit_in_flight_settle_returns_at_once() -> None:
    assert WrittenNotifications().settle(60) is False


def test_settle_waits_for_the_commits_in_flight_when_asked_and_then_finds_their_notifications() -> None:
    written = WrittenNotifications()
    written.follow("/q")
    ticket = written.sending()
    settled = threading.Event()
    found: dict[str, bytes] = {}

    def follower() -> None:
        written.settle(60)
        found.update(written.take("/q", ["n_0000000001"]))
        settled.set()

    thread = threading.Thread(target=follower)
    thread.start()
    written.record("/q/n_", [("/q/n_0000000001", b"data")])
    written.sent(ticket)

    assert settled.wait(60)
    thread.join(60)
    assert found == {"n_0000000001": b"data"}


def test_a_notification_whose_writer_installed_the_change_is_taken_without_data() -> None:
    written = WrittenNotifications()
    written.follow("/q")
    written.record("/q/n_", [("/q/n_0000000001", None), ("/q/n_0000000002", b"data")])

    assert written.take("/q", ["n_0000000001", "n_0000000002", "n_0000000003"]) == {
        "n_0000000001": None,
        "n_0000000002": b"data",
    }
    assert written.take("/q", ["n_0000000001", "n_0000000002"]) == {}  # taken once


def test_followers_settling_on_different_commits_each_return_once_theirs_are_answered() -> None:
    written = WrittenNotifications()
    first = written.sending()
    first_settled, second_settled = threading.Event(), threading.Event()
    waiting = threading.Barrier(2)

    def settle(done: threading.Event) -> None:
        waiting.wait(60)
        written.settle(60)
        done.set()

    early = threading.Thread(target=settle, args=(first_settled,))  # waits for the first commit only
    early.start()
    waiting.wait(60)
    eventually(lambda: len(written._awaited) == 1)  # the early follower is waiting
    second = written.sending()
    late = threading.Thread(target=settle, args=(second_settled,))  # waits for both
    late.start()
    waiting.wait(60)
    eventually(lambda: len(written._awaited) == 2)

    written.sent(first)
    assert first_settled.wait(60)
    written.sent(second)
    assert second_settled.wait(60)
    early.join(60)
    late.join(60)
    assert written._awaited == []
