"""When the leader sweeps (app/domain/sweep_schedule.py): every interval, and early once expired tokens pile
up or a list nears its limit, never more often than every few seconds."""

from __future__ import annotations

import pytest

from app.domain.capacity import CapacityPolicy
from app.domain.sweep_schedule import EARLY_GAP_MS, SweepReason, SweepSchedule

HOUR = 3_600_000
SCHEDULE = SweepSchedule(HOUR, threshold=10)


def _never() -> bool:
    raise AssertionError("asked about capacity when it did not matter")


def test_the_threshold_is_a_hundredth_of_the_tokens_the_budget_admits() -> None:
    assert SweepSchedule.of(HOUR, CapacityPolicy()).threshold == 346  # 34,611 tokens at the default budget
    assert SweepSchedule.of(HOUR, CapacityPolicy(20_000)).threshold == 6
    assert SweepSchedule.of(HOUR, CapacityPolicy(200)).threshold == 1


def test_the_interval_sweep_comes_whatever_else_holds() -> None:
    assert SCHEDULE.due(now_ms=HOUR, last_ms=0, expired=0, near_capacity=_never) is SweepReason.INTERVAL


def test_piled_up_expired_tokens_bring_the_sweep_forward() -> None:
    now = EARLY_GAP_MS
    assert SCHEDULE.due(now_ms=now, last_ms=0, expired=10, near_capacity=_never) is SweepReason.PILED_UP
    assert SCHEDULE.due(now_ms=now, last_ms=0, expired=9, near_capacity=lambda: False) is None


def test_any_expired_token_is_swept_early_when_a_list_is_near_its_limit() -> None:
    now = EARLY_GAP_MS
    assert SCHEDULE.due(now_ms=now, last_ms=0, expired=1, near_capacity=lambda: True) is SweepReason.NEAR_CAPACITY
    assert SCHEDULE.due(now_ms=now, last_ms=0, expired=0, near_capacity=_never) is None


@pytest.mark.parametrize("since", [0, 1, EARLY_GAP_MS - 1])
def test_early_sweeps_wait_a_few_seconds_after_the_last(since: int) -> None:
    assert SCHEDULE.due(now_ms=100_000 + since, last_ms=100_000, expired=10**6, near_capacity=_never) is None


def test_a_short_interval_is_looked_at_that_often() -> None:
    assert SweepSchedule(200, 1).check_every_ms() == 200
    assert SCHEDULE.check_every_ms() == 1_000


def test_an_interval_or_threshold_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        SweepSchedule(0, 1)
    with pytest.raises(ValueError):
        SweepSchedule(1, 0)
