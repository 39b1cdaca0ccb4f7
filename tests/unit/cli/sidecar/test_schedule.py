"""The sidecar's schedule: renew at 80% of the way to expiry, replace at 80% of the lifetime."""

from __future__ import annotations

import pytest

from app.cli.sidecar.schedule import (
    Action,
    Step,
    TokenTimes,
    next_step,
    retirement_period_ms,
    server_clock_offset_ms,
)

HOUR = 3_600_000
DAY = 24 * HOUR
EIGHTY_PERCENT_OF_A_WEEK = 483_840_000  # 5.6 days


def token(issue: int, expiry: int, maximum: int) -> TokenTimes:
    return TokenTimes(issue_timestamp=issue, expiry_timestamp=expiry, max_timestamp=maximum)


def test_renews_at_eighty_percent_of_the_way_to_expiry() -> None:
    assert next_step(0, token(0, DAY, 7 * DAY), renewable=True) == Step(Action.RENEW, 69_120_000)
    # later in the token's life, measured from now, not from the issue time
    assert next_step(10 * HOUR, token(0, DAY, 7 * DAY), renewable=True) == Step(Action.RENEW, 10 * HOUR + 40_320_000)


def test_replaces_once_eighty_percent_of_the_lifetime_has_passed() -> None:
    times = token(0, 6 * DAY, 7 * DAY)
    # the renewal point (5.8 days) is past the replacement point (5.6 days): replace instead
    assert next_step(5 * DAY, times, renewable=True) == Step(Action.REPLACE, EIGHTY_PERCENT_OF_A_WEEK)


def test_a_renewal_clamped_to_the_maximum_leads_to_a_replacement() -> None:
    times = token(0, 7 * DAY, 7 * DAY)
    assert next_step(int(6.5 * DAY), times, renewable=True) == Step(Action.REPLACE, int(6.5 * DAY))


def test_a_token_this_client_may_not_renew_is_replaced_at_the_renewal_point() -> None:
    assert next_step(0, token(0, DAY, 7 * DAY), renewable=False) == Step(Action.REPLACE, 69_120_000)
    # and never later than the replacement point
    assert next_step(0, token(0, 7 * DAY, 7 * DAY), renewable=False) == Step(Action.REPLACE, EIGHTY_PERCENT_OF_A_WEEK)


def test_an_expired_token_is_replaced_now() -> None:
    assert next_step(2 * DAY, token(0, DAY, 7 * DAY), renewable=True) == Step(Action.REPLACE, 2 * DAY)
    assert next_step(DAY, token(0, DAY, 7 * DAY), renewable=True) == Step(Action.REPLACE, DAY)


def test_the_whole_life_of_a_token_short_lifetimes() -> None:
    """Simulate a server with expiry 2 s and max 6 s: renewals until the replacement, never past expiry."""
    expiry_period, lifetime = 2_000, 6_000
    times = token(0, expiry_period, lifetime)
    now, actions = 0, []
    while True:
        step = next_step(now, times, renewable=True)
        assert now <= step.at_ms < times.expiry_timestamp
        now = step.at_ms
        actions.append(step.action)
        if step.action is Action.REPLACE:
            break
        times = token(0, min(lifetime, now + expiry_period), lifetime)
    assert actions == [Action.RENEW, Action.RENEW, Action.REPLACE]
    assert now == 4_800


@pytest.mark.parametrize("fraction", [0.5, 0.8, 0.9])
def test_the_fraction_is_a_parameter(fraction: float) -> None:
    assert next_step(0, token(0, 1_000, 100_000), renewable=True, fraction=fraction).at_ms == int(1_000 * fraction)


def test_a_replaced_token_ends_after_the_grace_period_unless_it_ends_sooner() -> None:
    assert retirement_period_ms(1_000, 100_000, 30_000) == 30_000
    assert retirement_period_ms(1_000, 20_000, 30_000) is None
    assert retirement_period_ms(1_000, 31_000, 30_000) is None
    assert retirement_period_ms(1_000, 100_000, 0) == 0


def test_server_clock_offset_from_the_middle_of_the_request() -> None:
    assert server_clock_offset_ms(10_500, 1_000, 2_000) == 9_000
    assert server_clock_offset_ms(1_500, 1_000, 2_000) == 0
    assert server_clock_offset_ms(500, 1_000, 2_000) == -1_000
