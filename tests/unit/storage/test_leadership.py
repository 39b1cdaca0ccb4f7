"""The thread life cycle both leaderships share (app/storage/leadership.py), driven by a contender that wins
when the test says so. Synchronised by events, never by sleeping."""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.service.ports import Leadership
from app.storage.leadership import ContendingLeadership

WAIT_S = 30.0


class _Contender(ContendingLeadership):
    """Wins once per ``win()``; records the hooks' calls."""

    def __init__(self, work: Callable[[threading.Event], None]) -> None:
        super().__init__("test-lead", "replica-a", work)
        self._wins = threading.Semaphore(0)
        self.calls: list[str] = []

    def win(self) -> None:
        self._wins.release()

    def _contend(self) -> None:
        while not self._stopped.is_set():
            if self._wins.acquire(timeout=0.01):
                self._lead(" (turn)")

    def _stop_contending(self) -> None:
        self.calls.append("stop contending")

    def _began(self) -> None:
        self.calls.append(f"began leader={self.is_leader}")

    def _ended(self) -> None:
        self.calls.append(f"ended leader={self.is_leader} lost={self._lost.is_set()}")


class _Work:
    """A duty that runs until told to return or until ``lost``; says what it saw."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.finish = threading.Event()
        self.returned = threading.Event()
        self.saw: list[tuple[bool, bool]] = []
        self.leadership: _Contender | None = None

    def __call__(self, lost: threading.Event) -> None:
        assert self.leadership is not None
        self.saw.append((self.leadership.is_leader, lost.is_set()))
        self.started.set()
        while not lost.is_set() and not self.finish.is_set():
            lost.wait(0.01)
        self.returned.set()


def _contender() -> tuple[_Contender, _Work]:
    work = _Work()
    contender = _Contender(work)
    work.leadership = contender
    return contender, work


def test_it_is_the_leadership_port() -> None:
    contender, _ = _contender()
    port: Leadership = contender
    assert port.is_leader is False


def test_the_work_runs_while_leading_with_lost_clear_and_ends_the_tenure_when_it_returns() -> None:
    contender, work = _contender()
    contender.start()
    try:
        assert not contender.is_leader
        contender.win()
        assert work.started.wait(WAIT_S)
        assert contender.is_leader
        work.finish.set()
        assert work.returned.wait(WAIT_S)
        _eventually(lambda: len(contender.calls) == 2)
        assert work.saw == [(True, False)]
        assert contender.calls == ["began leader=True", "ended leader=False lost=True"]
        assert not contender.is_leader
    finally:
        contender.stop()


def test_each_win_is_a_fresh_tenure_with_lost_cleared() -> None:
    contender, work = _contender()
    contender.start()
    try:
        for _ in range(2):
            work.started.clear()
            work.returned.clear()
            work.finish.clear()
            contender.win()
            assert work.started.wait(WAIT_S)
            work.finish.set()
            assert work.returned.wait(WAIT_S)
        assert work.saw == [(True, False), (True, False)]
    finally:
        contender.stop()


def test_stop_tells_the_work_to_return_and_ends_the_thread() -> None:
    contender, work = _contender()
    contender.start()
    contender.win()
    assert work.started.wait(WAIT_S)
    contender.stop()
    assert work.returned.is_set()  # lost was set, and the join waited for the work to return
    assert not contender.is_leader
    assert "stop contending" in contender.calls
    assert not any(thread.name == "leadership:test-lead" for thread in threading.enumerate())


def test_a_lead_won_as_stop_came_runs_the_work_with_lost_already_set() -> None:
    """``stop`` set ``lost`` between the win and the tenure's start: the tenure must not clear it away."""
    contender, work = _contender()
    contender.stop()  # never started: only the events are set
    contender._lead()
    assert work.saw == [(True, True)]
    assert work.returned.is_set() and not contender.is_leader


def test_stop_before_start_is_harmless() -> None:
    contender, _ = _contender()
    contender.stop()
    assert contender.calls == ["stop contending"]


def test_the_identifier_is_the_one_given() -> None:
    contender, _ = _contender()
    assert contender.identifier == "replica-a"


def _eventually(check: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(WAIT_S / 0.01)):
        if check():
            return
        done.wait(0.01)
    raise AssertionError("not reached in time")
