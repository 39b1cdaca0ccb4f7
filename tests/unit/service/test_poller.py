"""The one periodic thread (app/service/poller.py): rounds until stopped, a store's failure reported and the next
round coming all the same, and a stop that ends the thread. Synchronised by events, never by sleeping."""

from __future__ import annotations

import threading

import pytest

from app.domain.errors import KtsError, StoreUnavailable
from app.service.poller import Poller

WAIT_S = 30.0


class _Rounds:
    """Work that fails on the rounds named, and lets the test wait for a given round."""

    def __init__(self, failing: frozenset[int] = frozenset()) -> None:
        self.count = 0
        self.failing = failing
        self.failures: list[str] = []
        self.successes = 0
        self._changed = threading.Condition()

    def work(self) -> None:
        with self._changed:
            self.count += 1
            self._changed.notify_all()
            if self.count in self.failing:
                raise StoreUnavailable(f"round {self.count}")

    def failed(self, exc: KtsError) -> None:
        with self._changed:
            self.failures.append(exc.message)
            self._changed.notify_all()

    def succeeded(self) -> None:
        with self._changed:
            self.successes += 1
            self._changed.notify_all()

    def wait_for(self, reported: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.failures) + self.successes >= reported, WAIT_S)


def test_rounds_come_until_stopped_and_each_outcome_is_reported() -> None:
    rounds = _Rounds(failing=frozenset({2}))
    poller = Poller("test-poller", rounds.work, interval_s=0.001, failed=rounds.failed, succeeded=rounds.succeeded)
    poller.start()
    rounds.wait_for(4)
    poller.stop()
    assert rounds.failures == ["round 2"]  # the failure was reported, and rounds went on after it
    assert rounds.successes >= 3


def test_stop_ends_the_thread() -> None:
    rounds = _Rounds()
    poller = Poller("test-poller-stop", rounds.work, interval_s=0.001, failed=rounds.failed, succeeded=rounds.succeeded)
    poller.start()
    rounds.wait_for(1)
    poller.stop()
    assert not any(thread.name == "test-poller-stop" for thread in threading.enumerate())


def test_the_first_round_waits_an_interval_and_stop_cuts_the_wait() -> None:
    rounds = _Rounds()
    poller = Poller("test-poller-idle", rounds.work, interval_s=3600, failed=rounds.failed)
    poller.start()
    poller.stop()
    assert rounds.count == 0
    assert not any(thread.name == "test-poller-idle" for thread in threading.enumerate())


def test_stop_before_start_is_harmless() -> None:
    Poller("never-started", lambda: None, interval_s=1, failed=lambda exc: None).stop()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_bug_in_the_work_ends_the_thread_rather_than_looping() -> None:
    ran = threading.Event()

    def broken() -> None:
        ran.set()
        raise RuntimeError("bug")

    poller = Poller("test-poller-bug", broken, interval_s=0.001, failed=lambda exc: None)
    poller.start()
    assert ran.wait(WAIT_S)
    poller.stop()
    assert not any(thread.name == "test-poller-bug" for thread in threading.enumerate())
