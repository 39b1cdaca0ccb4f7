"""The answers every lockout store reads from its view (app/storage/lockout_mirror.py), on a view filled by hand
and a clock the test sets."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from app.storage.lockout_mirror import LockoutMirror


@dataclass(frozen=True)
class _Entry:
    key: str
    ends_ms: int
    is_lock: bool = True


class _Mirror(LockoutMirror[int, _Entry]):
    def __init__(self, *, max_shared: int = 3) -> None:
        super().__init__(max_shared=max_shared)
        self.now = 1_000

    def now_ms(self) -> int:
        return self.now

    def fill(self, *entries: _Entry) -> None:
        self._entries = dict(enumerate(entries))

    def room(self) -> bool:
        return self._room_to_share()

    def full(self, in_force: int, listed: int = 0) -> bool:
        return self._full(in_force, listed)


def test_an_account_without_locks_is_not_locked() -> None:
    mirror = _Mirror()
    assert mirror.locked_ms("alice") == 0
    assert mirror.in_force() == 0


def test_an_account_stays_locked_until_its_latest_lock_ends() -> None:
    mirror = _Mirror()
    mirror.fill(_Entry("alice", 1_500), _Entry("alice", 3_000), _Entry("bob", 9_000))
    assert mirror.locked_ms("alice") == 2_000
    mirror.now = 2_999
    assert mirror.locked_ms("alice") == 1
    mirror.now = 3_000
    assert mirror.locked_ms("alice") == 0
    mirror.now = 4_000  # ended, not yet deleted: never a negative time
    assert mirror.locked_ms("alice") == 0


def test_a_release_is_no_lock_whatever_its_end() -> None:
    mirror = _Mirror()
    mirror.fill(_Entry("alice", 5_000, is_lock=False))
    assert mirror.locked_ms("alice") == 0
    assert mirror.in_force() == 0


def test_only_locks_that_have_not_ended_are_in_force() -> None:
    mirror = _Mirror()
    mirror.fill(_Entry("a", 999), _Entry("b", 1_000), _Entry("c", 1_001), _Entry("d", 2_000), _Entry("e", 9, False))
    assert mirror.in_force() == 2


def test_the_bound_counts_locks_in_force_and_twice_that_listed() -> None:
    mirror = _Mirror(max_shared=3)
    assert not mirror.full(2, 5)
    assert mirror.full(3, 3)
    assert mirror.full(0, 6)
    assert not mirror.full(2)  # a store that lists nothing but locks passes only what is in force


def test_room_to_share_while_under_the_bound() -> None:
    mirror = _Mirror(max_shared=3)
    mirror.fill(_Entry("a", 2_000), _Entry("b", 2_000), _Entry("c", 10))  # one ended: two in force
    assert mirror.room()


def test_no_room_once_the_bound_is_reached_and_it_says_so(caplog: pytest.LogCaptureFixture) -> None:
    mirror = _Mirror(max_shared=2)
    mirror.fill(_Entry("a", 2_000), _Entry("b", 2_000))
    with caplog.at_level(logging.WARNING):
        assert not mirror.room()
    assert "2 account locks are shared already" in caplog.text


def test_no_room_when_ended_entries_fill_twice_the_bound() -> None:
    mirror = _Mirror(max_shared=2)
    mirror.fill(*(_Entry(str(n), 10) for n in range(4)))  # none in force, four listed
    assert mirror.in_force() == 0
    assert not mirror.room()
