"""The sidecar's backoff, run by tenacity with a recording sleep: doubling ceilings, equal jitter, the cap,
Retry-After, and any number of attempts."""

from __future__ import annotations

import random

import pytest
from tenacity import Retrying, retry_if_exception_type
from tenacity.wait import wait_base

from app.cli.client.http_client import RequestRefused, ServiceUnreachable
from app.cli.sidecar.retry import AtLeastRetryAfter, equal_jitter

UNREACHABLE = ServiceUnreachable("cannot reach http://kts.test: refused")


def delays(wait: wait_base, failures: list[Exception]) -> list[float]:
    """The pauses tenacity takes while ``failures`` are raised one after the other, before a success."""
    slept: list[float] = []
    pending = iter(failures)

    def attempt() -> str:
        failure = next(pending, None)
        if failure is not None:
            raise failure
        return "done"

    retrying = Retrying(wait=wait, sleep=slept.append, retry=retry_if_exception_type(Exception), reraise=True)
    assert retrying(attempt) == "done"
    return slept


@pytest.fixture(autouse=True)
def _repeatable_jitter() -> None:
    random.seed(20240501)


def test_each_delay_is_between_half_and_all_of_a_doubling_ceiling_up_to_the_cap() -> None:
    slept = delays(equal_jitter(initial_s=0.5, cap_s=30.0), [UNREACHABLE] * 12)
    ceilings = [min(30.0, 0.5 * 2**attempt) for attempt in range(12)]
    assert slept[0] >= 0.25
    for delay, ceiling in zip(slept, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    assert ceilings[-1] == 30.0


def test_the_jitter_spreads_sidecars_that_fail_together() -> None:
    first_delays = [delays(equal_jitter(), [UNREACHABLE])[0] for _ in range(200)]
    assert min(first_delays) < 0.3 and max(first_delays) > 0.45  # not all in step
    assert all(0.25 <= delay <= 0.5 for delay in first_delays)


def test_a_retry_after_hint_lengthens_the_delay_within_the_cap() -> None:
    wait = AtLeastRetryAfter(equal_jitter(cap_s=10.0), cap_s=10.0)
    busy = RequestRefused(503, None, "Busy.", retry_after_s=2.0)
    very_busy = RequestRefused(429, None, "Too many requests.", retry_after_s=60.0)
    assert delays(wait, [busy, very_busy, UNREACHABLE])[:2] == [2.0, 10.0]
    assert 0.5 <= delays(wait, [UNREACHABLE, UNREACHABLE])[1] <= 1.0  # no hint: the backoff alone


def test_backoff_survives_any_number_of_attempts() -> None:
    slept = delays(equal_jitter(cap_s=30.0), [UNREACHABLE] * 5_000)
    assert max(slept) <= 30.0
    assert min(slept[-100:]) >= 15.0
