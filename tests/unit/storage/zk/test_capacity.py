"""The capacity guard over a fake gauge: what it reads, when it trusts an earlier reading, what it refuses,
when it says room is expected, and the 80% warning."""

from __future__ import annotations

import logging

import pytest

from app.domain.capacity import CapacityPolicy, ChildList, Purpose
from app.domain.errors import CapacityExhausted
from app.storage.zk.capacity import CapacityGuard
from tests.unit.fakes import NOW, FakeClock
from tests.unit.storage.zk.fakes import FakeChildLists

POLICY = CapacityPolicy(10_000)
ISSUE_MOST = POLICY.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)


def _guard(gauge: FakeChildLists, clock: FakeClock, next_expiry: int | None = None) -> CapacityGuard:
    return CapacityGuard(gauge, POLICY, clock=clock, next_expiry_ms=lambda: next_expiry)


def test_a_recent_reading_far_from_the_limit_is_reused_and_an_old_one_is_not() -> None:
    gauge, clock = FakeChildLists(changes=10), FakeClock(NOW)
    guard = CapacityGuard(gauge, CapacityPolicy(), clock=clock, next_expiry_ms=lambda: None)
    guard.admit_create()
    guard.admit_renew()
    assert gauge.reads == 1
    clock.advance(1_000)
    guard.admit_create()
    assert gauge.reads == 2


def test_near_the_limit_every_decision_reads_zookeeper_again() -> None:
    gauge, clock = FakeChildLists(changes=ISSUE_MOST - 3), FakeClock(NOW)
    guard = _guard(gauge, clock)
    guard.admit_create()
    guard.admit_create()
    assert gauge.reads == 2
    gauge.counts[ChildList.TOKEN_CHANGES] = ISSUE_MOST  # another replica filled it meanwhile
    with pytest.raises(CapacityExhausted):
        guard.admit_create()


def test_creates_and_renews_are_refused_where_expires_still_pass() -> None:
    oldest = NOW - 14 * 60 * 1000
    guard = _guard(FakeChildLists(changes=ISSUE_MOST, oldest_ms=oldest), FakeClock(NOW))
    with pytest.raises(CapacityExhausted) as refused:
        guard.admit_renew()
    assert "/delegation_token/token_changes" in refused.value.message
    assert refused.value.retry_after_s == 60  # the oldest is purged a minute from now
    with pytest.raises(CapacityExhausted):
        guard.admit_create()
    guard.admit_expire()


def test_expires_are_refused_only_once_the_whole_budget_is_used() -> None:
    most = POLICY.max_entries(ChildList.TOKEN_CHANGES, Purpose.REVOKE)
    guard = _guard(FakeChildLists(changes=most), FakeClock(NOW))
    with pytest.raises(CapacityExhausted) as refused:
        guard.admit_expire()
    assert refused.value.retry_after_s == 60  # no notification found: no estimate


def test_a_full_token_list_expects_room_at_the_next_expiry_and_not_at_a_past_one() -> None:
    tokens_most = POLICY.max_entries(ChildList.TOKENS, Purpose.ISSUE)
    with pytest.raises(CapacityExhausted) as refused:
        _guard(FakeChildLists(tokens=tokens_most), FakeClock(NOW), next_expiry=NOW + 90_000).admit_create()
    assert "(/delegation_token/tokens)" in refused.value.message
    assert refused.value.retry_after_s == 90
    with pytest.raises(CapacityExhausted) as waiting_for_sweep:
        _guard(FakeChildLists(tokens=tokens_most), FakeClock(NOW), next_expiry=NOW - 1).admit_create()
    assert "expires and is swept" in waiting_for_sweep.value.message
    assert waiting_for_sweep.value.retry_after_s == 60


def test_the_estimate_of_when_room_comes_is_reused_for_a_few_seconds() -> None:
    gauge, clock = FakeChildLists(changes=ISSUE_MOST, oldest_ms=NOW), FakeClock(NOW)
    guard = _guard(gauge, clock)
    for _ in range(3):
        with pytest.raises(CapacityExhausted):
            guard.admit_create()
    assert gauge.oldest_reads == 1


def test_the_sweep_room_leaves_half_the_reserve() -> None:
    guard = _guard(FakeChildLists(changes=ISSUE_MOST), FakeClock(NOW))
    assert guard.sweep_room() == POLICY.room(guard.read()[ChildList.TOKEN_CHANGES], Purpose.SWEEP) > 0


def test_one_warning_when_a_list_passes_80_percent_and_another_after_it_fell_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="app.storage.zk.capacity")
    gauge = FakeChildLists(changes=(8_000 - 88) // 27 + 1)
    guard = _guard(gauge, FakeClock(NOW))
    guard.read()
    guard.read()
    warnings = [record.getMessage() for record in caplog.records if "80%" in record.getMessage()]
    assert len(warnings) == 1 and "/delegation_token/token_changes" in warnings[0]
    gauge.counts[ChildList.TOKEN_CHANGES] = 0
    guard.read()
    gauge.counts[ChildList.TOKEN_CHANGES] = 400
    guard.read()
    assert sum("80%" in record.getMessage() for record in caplog.records) == 2


def test_live_tokens_count_towards_the_notification_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="app.storage.zk.capacity")
    _guard(FakeChildLists(tokens=150, changes=150), FakeClock(NOW)).read()  # each list alone is under 80%
    warnings = [record.getMessage() for record in caplog.records if "80%" in record.getMessage()]
    assert len(warnings) == 1 and "/delegation_token/token_changes lists 300 children" in warnings[0]


def test_a_flood_of_refusals_is_one_log_line_per_ten_seconds(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="app.storage.zk.capacity")
    clock = FakeClock(NOW)
    guard = _guard(FakeChildLists(changes=ISSUE_MOST), clock)
    for _ in range(5):
        with pytest.raises(CapacityExhausted):
            guard.admit_create()
    clock.advance(10_000)
    with pytest.raises(CapacityExhausted):
        guard.admit_create()
    assert sum("refusing token writes" in record.getMessage() for record in caplog.records) == 2
