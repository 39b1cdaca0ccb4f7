"""The per-account lockout's rule on a fake clock: each replica checks at most its share of the threshold,
locks the account itself when it reaches it, and a published lock once seen decides alone."""

from __future__ import annotations

import pytest

from app.domain.lockout import AccountLockout, LockoutPolicy
from tests.unit.fakes import FakeClock

ALICE = "User:alice"
WINDOW = 60_000
DURATION = 900_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, threshold: int = 10) -> AccountLockout:
    return AccountLockout(LockoutPolicy(threshold, WINDOW, DURATION, max_keys=100), clock)


@pytest.mark.parametrize(
    ("threshold", "replicas", "share"), [(10, 1, 10), (10, 2, 5), (10, 3, 4), (1, 5, 1), (7, 0, 7)]
)
def test_the_share_is_the_threshold_divided_among_replicas(threshold: int, replicas: int, share: int) -> None:
    assert LockoutPolicy(threshold).share(replicas) == share


@pytest.mark.parametrize("threshold", [1, 2, 3, 10, 11])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
def test_replicas_together_check_fewer_than_threshold_plus_replicas(threshold: int, replicas: int) -> None:
    """Each replica refuses once it reached its share, whether or not it saw the others' locks."""
    clock = FakeClock()
    lockouts = [make(clock, threshold) for _ in range(replicas)]
    checked = 0
    for _ in range(threshold * 10):
        for lockout in lockouts:
            if lockout.wait_ms(ALICE, None) == 0:
                checked += 1
                lockout.failed(ALICE, replicas)
    assert checked == replicas * -(-threshold // replicas)
    assert checked < threshold + replicas


def test_reaching_the_share_locks_at_once_and_asks_to_publish(clock: FakeClock) -> None:
    lockout = make(clock)
    assert [lockout.failed(ALICE, 2) for _ in range(4)] == [None] * 4
    lock = lockout.failed(ALICE, 2)
    assert lock is not None
    assert (lock.account, lock.locked_at_ms, lock.until_ms, lock.failures) == (
        ALICE,
        clock.now,
        clock.now + DURATION,
        5,
    )
    assert lockout.wait_ms(ALICE, None) == DURATION
    assert lockout.wait_ms("User:bob", None) == 0
    clock.advance(DURATION)
    assert lockout.wait_ms(ALICE, None) == 0


def test_a_window_without_failures_resets_the_count(clock: FakeClock) -> None:
    lockout = make(clock, threshold=3)
    lockout.failed(ALICE, 1)
    lockout.failed(ALICE, 1)
    clock.advance(WINDOW)
    assert lockout.failed(ALICE, 1) is None
    assert lockout.failed(ALICE, 1) is None
    assert lockout.failed(ALICE, 1) is not None


def test_a_success_resets_the_count(clock: FakeClock) -> None:
    lockout = make(clock, threshold=3)
    lockout.failed(ALICE, 1)
    lockout.failed(ALICE, 1)
    lockout.succeeded(ALICE)
    assert lockout.failed(ALICE, 1) is None
    assert lockout.failed(ALICE, 1) is None


def test_a_published_lock_once_seen_replaces_the_replicas_own(clock: FakeClock) -> None:
    lockout = make(clock, threshold=1)
    lock = lockout.failed(ALICE, 1)
    assert lock is not None
    assert lockout.wait_ms(ALICE, lock.until_ms) == DURATION
    assert lockout.wait_ms(ALICE, None) == 0  # released by a super user elsewhere: not locked here either
    assert lockout.wait_ms(ALICE, clock.now + 1_000) == 1_000  # another replica's lock


def test_released_forgets_the_count_and_the_lock(clock: FakeClock) -> None:
    lockout = make(clock, threshold=2)
    lockout.failed(ALICE, 1)
    lockout.failed(ALICE, 1)
    assert lockout.wait_ms(ALICE, None) > 0
    lockout.released(ALICE)
    assert lockout.wait_ms(ALICE, None) == 0
    assert lockout.failed(ALICE, 1) is None


def test_memory_is_bounded(clock: FakeClock) -> None:
    lockout = make(clock)
    for n in range(1_000):
        lockout.failed(f"User:u{n}", 1)
    assert len(lockout) == 100


@pytest.mark.parametrize("field", ["threshold", "window_ms", "duration_ms", "max_keys"])
def test_the_policy_refuses_zero(field: str) -> None:
    with pytest.raises(ValueError):
        LockoutPolicy(**{field: 0})
