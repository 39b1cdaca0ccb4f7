"""The brute-force rule of ``app/domain/throttle.py`` under a fake clock: the leaky bucket against an exact
reference model, the three refusal rules, resets, audit bursts and the memory bound."""

from __future__ import annotations

import itertools
import threading
from fractions import Fraction

import pytest

from app.domain.throttle import (
    MAX_SAMPLES,
    MAX_SUBJECT_LENGTH,
    SAMPLE_CHARS,
    AuditPlan,
    BurstSummary,
    FailureThrottle,
    Limit,
    ThrottlePolicy,
    address_group,
    token_subject,
)
from tests.unit.fakes import FakeClock


def user_subject(user_name: str) -> str:
    """The subject the authenticator claims for a Basic login."""
    return f"User:{user_name}"


WINDOW = 60_000
ALICE = user_subject("alice")
BOB = user_subject("bob")
ATTACKER = "192.0.2.66"
HOME = "198.51.100.7"
OTHER = "198.51.100.8"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, *, max_failures: int = 3, address_max: int = 5, max_keys: int = 1000) -> FailureThrottle:
    return FailureThrottle(ThrottlePolicy(max_failures, address_max, WINDOW, max_keys), clock)


def fail(throttle: FailureThrottle, address: str, subject: str | None, times: int = 1) -> list[AuditPlan]:
    plans = []
    for _ in range(times):
        assert not throttle.admit(address, subject).refused
        plans.append(throttle.failed(address, subject))
    return plans


# -- the leaky bucket, against an exact model: a level in failures that drains max/window per ms


class ReferenceBucket:
    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        self.level = Fraction(0)
        self.at = 0

    def _drain(self, now: int) -> None:
        self.level = max(
            Fraction(0), self.level - Fraction(now - self.at) * self.limit.max_failures / self.limit.window_ms
        )
        self.at = now

    def wait_ms(self, now: int) -> int:
        self._drain(now)
        over = self.level - (self.limit.max_failures - 1)
        if over <= 0:
            return 0
        exact = over * self.limit.window_ms / self.limit.max_failures
        return -(-exact.numerator // exact.denominator)

    def charge(self, now: int) -> None:
        self._drain(now)
        self.level = min(self.level + 1, Fraction(self.limit.max_failures))


@pytest.mark.parametrize("max_failures", [1, 2, 3, 4])
@pytest.mark.parametrize("window_ms", [1, 5, 12])
def test_bucket_matches_the_reference_model_for_every_short_sequence(max_failures: int, window_ms: int) -> None:
    limit = Limit(max_failures, window_ms)
    steps = sorted({0, 1, 2, 3, window_ms - 1, window_ms, window_ms + 1})
    for deltas in itertools.product(steps, repeat=4):
        tat, now = 0, 1_000
        model = ReferenceBucket(limit)
        model.at = now
        for delta in deltas:
            now += delta
            wait = limit.wait_ms(tat, now)
            assert wait == model.wait_ms(now), (deltas, now)
            if wait == 0:  # only admitted attempts reach a credential check and can fail
                tat = limit.charge(tat, now)
                model.charge(now)


@pytest.mark.parametrize(("max_failures", "window_ms"), [(1, 60_000), (3, 60_000), (10, 60_000), (7, 1_000)])
def test_a_burst_of_max_then_one_per_interval_then_clean_after_a_window(max_failures: int, window_ms: int) -> None:
    limit = Limit(max_failures, window_ms)
    tat, now = 0, 5_000_000
    for _ in range(max_failures):
        assert limit.wait_ms(tat, now) == 0
        tat = limit.charge(tat, now)
    interval = -(-window_ms // max_failures)
    assert limit.wait_ms(tat, now) == interval
    assert limit.wait_ms(tat, now + interval - 1) > 0
    assert limit.wait_ms(tat, now + interval) == 0
    tat = limit.charge(tat, now + interval)
    assert limit.wait_ms(tat, now + interval) > 0
    quiet = now + interval + window_ms  # a window after the last failure: a whole burst again
    for _ in range(max_failures):
        assert limit.wait_ms(tat, quiet) == 0
        tat = limit.charge(tat, quiet)


def test_a_full_bucket_does_not_store_debt() -> None:
    limit = Limit(2, 1_000)
    tat = 0
    for _ in range(50):  # charged while full (rule 3 admits clean pairs while their subject is full)
        tat = limit.charge(tat, 10_000)
    assert limit.wait_ms(tat, 10_000) == 500
    assert limit.wait_ms(tat, 11_000) == 0


@pytest.mark.parametrize(("max_failures", "window_ms"), [(0, 1_000), (1, 0), (-1, 5)])
def test_limits_must_be_positive(max_failures: int, window_ms: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        Limit(max_failures, window_ms)
    with pytest.raises(ValueError, match="at least"):
        FailureThrottle(ThrottlePolicy(max_failures, 5, window_ms), FakeClock())


def test_max_keys_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_keys"):
        ThrottlePolicy(max_keys=0)


# -- rule 2: one address guessing one password


def test_a_pair_is_refused_after_max_failures_with_the_wait(clock: FakeClock) -> None:
    throttle = make(clock)
    fail(throttle, ATTACKER, ALICE, 3)
    refused = throttle.admit(ATTACKER, ALICE)
    assert refused.refused
    assert refused.retry_after_ms == WINDOW // 3
    clock.advance(WINDOW // 3 - 1)
    assert throttle.admit(ATTACKER, ALICE).retry_after_ms == 1
    clock.advance(1)
    assert not throttle.admit(ATTACKER, ALICE).refused


def test_the_legitimate_user_from_another_address_is_never_refused(clock: FakeClock) -> None:
    throttle = make(clock)
    fail(throttle, ATTACKER, ALICE, 3)
    for _ in range(100):  # the attacker keeps hammering: every attempt refused, nothing charged
        assert throttle.admit(ATTACKER, ALICE).refused
    assert not throttle.admit(HOME, ALICE).refused
    throttle.succeeded(HOME, ALICE)
    assert not throttle.admit(HOME, ALICE).refused


def test_other_principals_from_the_same_address_are_not_refused_below_the_address_limit(clock: FakeClock) -> None:
    throttle = make(clock)
    fail(throttle, ATTACKER, ALICE, 3)
    assert not throttle.admit(ATTACKER, BOB).refused


def test_a_success_resets_its_pair_but_not_its_address(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=5)
    fail(throttle, HOME, ALICE, 2)
    throttle.succeeded(HOME, ALICE)
    fail(throttle, HOME, ALICE, 2)  # would be 4 > 3 without the reset
    throttle.succeeded(HOME, ALICE)
    fail(throttle, HOME, ALICE, 1)  # the fifth failure of this address
    refused = throttle.admit(HOME, ALICE)
    assert refused.refused  # the address is full: an attacker's own valid account cannot wipe it
    assert refused.retry_after_ms == WINDOW // 5


# -- rule 3: many addresses guessing one password


def test_a_full_principal_refuses_only_addresses_that_failed_for_it(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3)
    bots = [f"192.0.2.{n}" for n in range(1, 6)]
    for bot in bots:
        fail(throttle, bot, ALICE)  # each bot stays far below its pair and address limits
    for bot in bots:
        refused = throttle.admit(bot, ALICE)
        assert refused.refused
        assert 0 < refused.retry_after_ms <= WINDOW
    assert not throttle.admit(HOME, ALICE).refused  # never failed for alice: not refused
    fail(throttle, OTHER, BOB)
    assert not throttle.admit(OTHER, ALICE).refused  # failed for bob only: alice's rule does not apply


def test_a_principal_refusal_lifts_when_the_pair_failure_is_a_window_old(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3)
    fail(throttle, "192.0.2.1", ALICE)
    clock.advance(10_000)
    for n in range(2, 6):  # the principal stays full with fresh failures from other addresses
        fail(throttle, f"192.0.2.{n}", ALICE)
        clock.advance(10_000)
    refused = throttle.admit("192.0.2.1", ALICE)
    assert refused.refused
    assert refused.retry_after_ms == WINDOW - 50_000  # the pair's own failure turns a window old
    fail(throttle, "192.0.2.6", ALICE)
    clock.advance(WINDOW - 50_000)
    assert not throttle.admit("192.0.2.1", ALICE).refused


def test_a_principal_refusal_lifts_when_the_principal_drains(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3)
    for n in range(1, 4):
        fail(throttle, f"192.0.2.{n}", ALICE)
    refused = throttle.admit("192.0.2.1", ALICE)
    assert refused.retry_after_ms == WINDOW // 3  # one failure drains sooner than the pair's window
    clock.advance(WINDOW // 3)
    assert not throttle.admit("192.0.2.1", ALICE).refused


def test_a_success_lifts_the_principal_rule_for_its_address(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3)
    fail(throttle, HOME, ALICE)  # a typo
    for n in range(1, 4):
        fail(throttle, f"192.0.2.{n}", ALICE)
    assert throttle.admit(HOME, ALICE).refused
    throttle.succeeded(HOME, ALICE)  # e.g. a success checked before the attack filled the principal
    assert not throttle.admit(HOME, ALICE).refused


# -- rule 1: one address guessing many names


def test_an_address_is_refused_whatever_it_claims_after_its_limit(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=5)
    for n in range(5):
        fail(throttle, ATTACKER, user_subject(f"user{n}"))
    for subject in (user_subject("new"), token_subject("abc"), None, ALICE):
        refused = throttle.admit(ATTACKER, subject)
        assert refused.refused
        assert refused.retry_after_ms == WINDOW // 5
    assert not throttle.admit(HOME, user_subject("new")).refused
    assert not throttle.admit(HOME, None).refused


def test_attempts_without_a_subject_count_for_the_address_only(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=1, address_max=3)
    fail(throttle, ATTACKER, None, 3)
    assert throttle.admit(ATTACKER, None).refused
    assert not throttle.admit(HOME, ALICE).refused
    throttle.succeeded(ATTACKER, None)  # nothing to reset
    assert throttle.admit(ATTACKER, None).refused


def test_long_subjects_share_a_key(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=2)
    prefix = "User:" + "x" * MAX_SUBJECT_LENGTH
    fail(throttle, ATTACKER, prefix + "a")
    fail(throttle, ATTACKER, prefix + "b")
    assert throttle.admit(ATTACKER, prefix + "c").refused


# -- after a window, everything is clean and forgotten


def test_after_a_quiet_window_everything_works_again_and_is_dropped(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=5)
    for n in range(5):
        fail(throttle, ATTACKER, ALICE if n < 3 else BOB)
    assert throttle.admit(ATTACKER, ALICE).refused
    clock.advance(WINDOW)
    assert not throttle.admit(ATTACKER, ALICE).refused
    assert len(throttle) == 0


# -- audit bursts


def test_the_first_failure_of_a_burst_is_recorded_and_the_rest_summarised(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=100)
    start = clock.now
    plans = fail(throttle, ATTACKER, ALICE, 3)
    assert [plan.record_attempt for plan in plans] == [True, False, False]
    assert all(plan.summaries == () for plan in plans)
    refusals = [throttle.admit(ATTACKER, ALICE) for _ in range(10)]
    assert all(r.refused and r.audit == AuditPlan() for r in refusals)  # counted, not recorded
    clock.advance(WINDOW // 2)
    assert fail(throttle, ATTACKER, ALICE) == [AuditPlan()]  # drained a little: one more try, counted
    clock.advance(WINDOW // 2)  # a window after the burst began, the burst still going on
    assert not throttle.admit(ATTACKER, ALICE).refused
    plan = throttle.failed(ATTACKER, ALICE)
    assert plan == AuditPlan(
        record_attempt=False,
        summaries=(
            BurstSummary(ATTACKER, ALICE, attempts=14, refused=10, first_attempt_ms=start, last_attempt_ms=clock.now),
        ),
    )


def test_a_success_takes_its_own_failures_back_from_the_principal(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=100)
    fail(throttle, HOME, ALICE, 2)
    throttle.succeeded(HOME, ALICE)
    fail(throttle, "192.0.2.1", ALICE, 1)
    fail(throttle, HOME, ALICE, 1)
    assert not throttle.admit(HOME, ALICE).refused  # 4 failures for alice, but 2 were forgiven
    fail(throttle, "192.0.2.2", ALICE, 1)
    assert throttle.admit(HOME, ALICE).refused  # 3 unforgiven failures, and this pair failed


def test_a_burst_reports_at_most_once_per_window_and_once_when_it_ends(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=1, address_max=1000)
    summaries: list[BurstSummary] = []
    recorded = 0
    for _ in range(600):  # ten minutes of one refused or failed attempt per second
        admission = throttle.admit(ATTACKER, ALICE)
        plan = admission.audit if admission.refused else throttle.failed(ATTACKER, ALICE)
        recorded += plan.record_attempt
        summaries += plan.summaries
        clock.advance(1_000)
    assert recorded == 1
    assert len(summaries) == 9  # one per window after the first
    clock.advance(WINDOW)
    ended = throttle.admit(HOME, BOB).audit.summaries  # noticed at the next call, whoever makes it
    assert len(ended) == 1 and ended[0].address == ATTACKER
    assert recorded + sum(s.attempts for s in summaries + list(ended)) == 600
    assert throttle.admit(HOME, BOB).audit.summaries == ()


def test_a_refusal_can_open_a_burst_and_address_refusals_share_one(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=2)
    fail(throttle, ATTACKER, user_subject("a"))
    fail(throttle, ATTACKER, user_subject("b"))
    first = throttle.admit(ATTACKER, user_subject("c"))
    assert first.refused and first.audit.record_attempt  # the first of the address-wide burst
    for n in range(100):  # spraying names: all in the same burst
        admission = throttle.admit(ATTACKER, user_subject(f"n{n}"))
        assert admission.refused and not admission.audit.record_attempt
    clock.advance(WINDOW)
    ended = throttle.admit(HOME, None).audit.summaries
    assert ended == (
        BurstSummary(
            ATTACKER,
            None,
            attempts=100,
            refused=100,
            first_attempt_ms=ended[0].first_attempt_ms,
            last_attempt_ms=ended[0].last_attempt_ms,
        ),
    )


def test_bursts_are_per_address_and_subject(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=100)
    assert throttle.failed(ATTACKER, ALICE).record_attempt
    assert throttle.failed(ATTACKER, BOB).record_attempt
    assert throttle.failed(ATTACKER, None).record_attempt
    assert throttle.failed(HOME, ALICE).record_attempt
    assert not throttle.failed(ATTACKER, ALICE).record_attempt


def test_flush_reports_every_unreported_attempt(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3)
    fail(throttle, ATTACKER, ALICE, 3)
    throttle.failed(HOME, BOB)
    assert [(s.address, s.attempts) for s in throttle.flush()] == [(ATTACKER, 2)]
    assert throttle.flush() == []


# -- bounded memory


def test_many_addresses_cannot_grow_memory_past_max_keys(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=5, max_keys=50)
    evicted: list[BurstSummary] = []
    for n in range(5_000):
        address = f"2001:db8:{n:x}::1"  # one /64 each: addresses of one /64 share a key
        for _ in range(2):
            admission = throttle.admit(address, ALICE)
            plan = admission.audit if admission.refused else throttle.failed(address, ALICE)
            evicted += plan.summaries
        assert len(throttle) <= 100
    assert len(evicted) > 0  # evicted bursts still report their unrecorded attempts
    assert all(summary.attempts == 1 for summary in evicted)


def test_concurrent_failures_are_all_counted(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=1_000_000, address_max=1_000_000)
    recorded: list[bool] = []
    lock = threading.Lock()

    def hammer() -> None:
        for _ in range(500):
            plan = throttle.failed(ATTACKER, ALICE)
            with lock:
                recorded.append(plan.record_attempt)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert recorded.count(True) == 1
    assert [(s.attempts, s.refused) for s in throttle.flush()] == [(3_999, 0)]


# -- address groups


@pytest.mark.parametrize(
    ("address", "group"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2::99", "2001:db8:1:2::/64"),
        ("2001:0db8:0001:0002:0000:0000:0000:0001", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("::1", "::/64"),
        ("testclient", "testclient"),
        ("", ""),
    ],
)
def test_an_ipv6_address_counts_as_its_64_and_a_mapped_one_as_ipv4(address: str, group: str) -> None:
    assert address_group(address) == group


def test_addresses_of_one_ipv6_64_share_the_address_limit(clock: FakeClock) -> None:
    throttle = make(clock, address_max=5)
    for n in range(5):
        assert not throttle.admit(f"2001:db8:7:7::{n + 1:x}", f"User:u{n}").refused
        throttle.failed(f"2001:db8:7:7::{n + 1:x}", f"User:u{n}")
    assert throttle.admit("2001:db8:7:7:ffff::1", "User:someone").refused
    assert not throttle.admit("2001:db8:7:8::1", "User:someone").refused  # the next /64 is another client


# -- a lockout counts the accounts


def test_subjects_not_counted_leave_only_the_address_rule(clock: FakeClock) -> None:
    throttle = FailureThrottle(ThrottlePolicy(3, 100, WINDOW, 1000, counted_subjects=("DelegationToken:",)), clock)
    fail(throttle, ATTACKER, ALICE, times=10)  # users are the lockout's to count: never refused here
    token = token_subject("t1")
    fail(throttle, ATTACKER, token, times=3)
    assert throttle.admit(ATTACKER, token).refused


def test_a_refusal_by_another_rule_counts_in_its_burst(clock: FakeClock) -> None:
    throttle = make(clock)
    first = throttle.refuse(ATTACKER, ALICE, 5_000)
    assert (first.retry_after_ms, first.audit.record_attempt) == (5_000, True)
    assert not throttle.refuse(ATTACKER, ALICE, 4_000).audit.record_attempt
    assert [(s.address, s.subject, s.attempts, s.refused) for s in throttle.flush()] == [(ATTACKER, ALICE, 1, 1)]


# -- failures that name no known user or token


def test_unknown_names_from_one_address_are_one_burst_with_a_few_samples(clock: FakeClock) -> None:
    """A fresh name per attempt costs one row per address and window, not one row per name."""
    throttle = make(clock, max_failures=3, address_max=10_000)
    start = clock.now
    plans = [throttle.failed(ATTACKER, user_subject(f"made-up-{n}" + "x" * 200), known=False) for n in range(1_000)]
    assert [plan.record_attempt for plan in plans].count(True) == 1  # the first, in full
    assert all(plan.summaries == () for plan in plans)
    clock.advance(WINDOW)
    plan = throttle.failed(ATTACKER, user_subject("one-more"), known=False)  # a window later: a new burst
    (summary,) = plan.summaries
    assert (summary.address, summary.subject, summary.attempts, summary.unknown_names) == (ATTACKER, None, 999, True)
    assert summary.first_attempt_ms == start
    assert summary.samples == tuple(user_subject(f"made-up-{n}" + "x" * 200)[:SAMPLE_CHARS] for n in range(1, 6))
    assert len(summary.samples) == MAX_SAMPLES


def test_known_names_keep_their_own_bursts(clock: FakeClock) -> None:
    throttle = make(clock, max_failures=3, address_max=100)
    assert throttle.failed(ATTACKER, user_subject("ghost"), known=False).record_attempt
    assert throttle.failed(ATTACKER, ALICE).record_attempt  # a known user's failure: a burst of its own
    assert not throttle.failed(ATTACKER, user_subject("ghost-2"), known=False).record_attempt
    assert throttle.failed(HOME, user_subject("ghost"), known=False).record_attempt  # per address
    flushed = {(s.address, s.subject, s.unknown_names, s.samples) for s in throttle.flush()}
    assert flushed == {(ATTACKER, None, True, (user_subject("ghost-2"),))}


def test_failures_the_lockout_does_not_count_are_charged_to_their_pair(clock: FakeClock) -> None:
    """A super user's login from an exempt address skips the lockout (app/service/attempts.py): its failures are
    charged to the pair, so that address guesses that password no faster than any other; not to the subject,
    which the lockout counts, so others' failures never refuse a clean address."""
    throttle = make(clock, max_failures=3, address_max=100)
    for _ in range(3):
        assert not throttle.admit(HOME, ALICE).refused
        throttle.failed(HOME, ALICE, count_subject=False, count_pair=True)
    assert throttle.admit(HOME, ALICE).refused
    assert not throttle.admit(OTHER, ALICE).refused
    for _ in range(3):  # the lockout's own: the address alone, as before
        throttle.failed(ATTACKER, BOB, count_subject=False)
    assert not throttle.admit(ATTACKER, BOB).refused
