"""The child-list size arithmetic and who may still add to a list (app/domain/capacity.py)."""

from __future__ import annotations

import pytest

from app.domain import capacity
from app.domain.capacity import (
    CREATE,
    EXPIRE,
    RENEW,
    CapacityPolicy,
    ChildList,
    ListReading,
    Purpose,
    names_reply_bytes,
    reply_bytes,
)
from app.domain.errors import CapacityExhausted

TOKEN_ID = "E8gTWaIxRUOaSRH7wY3N1w"
NOTIFICATION = "token_change_0000000042"


def test_an_empty_listing_is_the_reply_header_the_count_and_the_stat() -> None:
    assert reply_bytes(0, 0) == 16 + 4 + 68 == 88
    assert names_reply_bytes([]) == 88


def test_each_child_costs_a_four_byte_length_and_its_utf8_name() -> None:
    assert names_reply_bytes([TOKEN_ID]) == 88 + 4 + 22
    assert names_reply_bytes([NOTIFICATION, NOTIFICATION]) == 88 + 2 * (4 + 23)
    assert names_reply_bytes(["é"]) == 88 + 4 + 2  # bytes, not characters


def test_names_have_the_fixed_lengths_kafka_writes() -> None:
    assert ChildList.TOKENS.name_length == len(TOKEN_ID)
    assert ChildList.TOKEN_CHANGES.name_length == len(NOTIFICATION)
    assert ChildList.TOKENS.entry_bytes == 26
    assert ChildList.TOKEN_CHANGES.entry_bytes == 27
    assert ChildList.TOKENS.path == "/delegation_token/tokens"
    assert ChildList.TOKEN_CHANGES.path == "/delegation_token/token_changes"


@pytest.mark.parametrize("child_list", list(ChildList))
def test_a_reading_of_n_entries_costs_what_listing_n_real_names_costs(child_list: ChildList) -> None:
    names = [TOKEN_ID if child_list is ChildList.TOKENS else NOTIFICATION] * 1234
    assert ListReading(child_list, 1234).bytes == names_reply_bytes(names)


def test_creates_and_renews_stop_a_tenth_below_the_budget_the_sweep_at_half_of_that_expires_at_it() -> None:
    policy = CapacityPolicy(1_000_000)
    assert policy.reserve_bytes == 100_000
    assert policy.limit(Purpose.ISSUE) == 900_000
    assert policy.limit(Purpose.SUPER_USER_ISSUE) == 950_000
    assert policy.limit(Purpose.SWEEP) == 950_000
    assert policy.limit(Purpose.REVOKE) == 1_000_000


def test_super_users_still_create_and_renew_where_everyone_else_is_refused() -> None:
    policy = CapacityPolicy(10_000)
    full = _readings(0, policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE))
    assert policy.full_list(full, CREATE, Purpose.ISSUE) is ChildList.TOKEN_CHANGES
    assert policy.full_list(full, CREATE, Purpose.SUPER_USER_ISSUE) is None
    assert policy.full_list(full, RENEW, Purpose.SUPER_USER_ISSUE) is None
    super_full = _readings(0, policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.SUPER_USER_ISSUE))
    assert policy.full_list(super_full, RENEW, Purpose.SUPER_USER_ISSUE) is ChildList.TOKEN_CHANGES
    assert policy.full_list(super_full, EXPIRE, Purpose.REVOKE) is None  # and shortening expires still pass


def test_near_means_past_the_warning_counting_notifications_to_come() -> None:
    policy = CapacityPolicy(10_000)
    assert not policy.near(_readings(0, 0))
    half = (8_000 - 88) // 27 // 2 + 1
    assert policy.near(_readings(half, half))  # the live tokens' notifications to come count


def test_the_default_budget_is_under_the_java_clients_default_limit_with_room_for_races() -> None:
    policy = CapacityPolicy()
    assert policy.max_bytes == 1_000_000 < capacity.JAVA_DEFAULT_MAX_BUFFER
    assert policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE) == 33_330  # 37 changes per second
    assert policy.max_entries(ChildList.TOKENS, Purpose.ISSUE) == 34_612
    assert policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.REVOKE) == 37_033
    # 40 concurrent requests on each of 44 replicas past the budget still fit under the Java limit
    assert policy.max_bytes + 44 * 40 * ChildList.TOKEN_CHANGES.entry_bytes < capacity.JAVA_DEFAULT_MAX_BUFFER


@pytest.mark.parametrize("child_list", list(ChildList))
@pytest.mark.parametrize("purpose", list(Purpose))
def test_room_is_exactly_what_fits_under_the_limit(child_list: ChildList, purpose: Purpose) -> None:
    policy = CapacityPolicy(5_000)
    most = policy.max_entries(child_list, purpose)
    assert ListReading(child_list, most).bytes <= policy.limit(purpose) < ListReading(child_list, most + 1).bytes
    for entries in (0, 1, most - 1, most, most + 1, most + 50):
        reading = ListReading(child_list, entries)
        room = policy.room(reading, purpose)
        assert room == max(0, most - entries)
        assert ListReading(child_list, entries + room).bytes <= policy.limit(purpose) or room == 0


def _readings(tokens: int, changes: int) -> dict[ChildList, ListReading]:
    return {
        ChildList.TOKENS: ListReading(ChildList.TOKENS, tokens),
        ChildList.TOKEN_CHANGES: ListReading(ChildList.TOKEN_CHANGES, changes),
    }


def test_a_create_counts_every_live_token_as_a_notification_to_come() -> None:
    policy = CapacityPolicy(10_000)
    changes_most = policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    # a create writes a notification now and one more when its token is deleted
    assert policy.full_list(_readings(10, changes_most - 12), CREATE, Purpose.ISSUE) is None
    assert policy.full_list(_readings(10, changes_most - 11), CREATE, Purpose.ISSUE) is ChildList.TOKEN_CHANGES
    assert policy.full_list(_readings(changes_most - 1, 0), CREATE, Purpose.ISSUE) is ChildList.TOKEN_CHANGES
    assert policy.full_list(_readings(0, changes_most), CREATE, Purpose.ISSUE) is ChildList.TOKEN_CHANGES


def test_the_token_list_itself_still_bounds_creates() -> None:
    policy = CapacityPolicy(10_000)
    tokens_most = policy.max_entries(ChildList.TOKENS, Purpose.ISSUE)
    assert policy.full_list(_readings(tokens_most, 0), {ChildList.TOKENS: 1}, Purpose.ISSUE) is ChildList.TOKENS


@pytest.mark.parametrize("tokens", [0, 1, 50, 150, 300])
def test_deleting_every_live_token_after_the_last_create_keeps_the_notifications_under_the_create_limit(
    tokens: int,
) -> None:
    policy = CapacityPolicy(10_000)
    changes_most = policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    changes = 0
    while policy.full_list(_readings(tokens, changes), CREATE, Purpose.ISSUE) is None:
        tokens, changes = tokens + 1, changes + 1
    assert changes + tokens <= changes_most  # every token deleted at once: one notification each, all fit


def test_a_renew_or_expire_adds_only_a_notification() -> None:
    policy = CapacityPolicy(10_000)
    changes_most = policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    assert policy.full_list(_readings(changes_most - 1, 0), RENEW, Purpose.ISSUE) is None
    assert policy.full_list(_readings(changes_most, 0), RENEW, Purpose.ISSUE) is ChildList.TOKEN_CHANGES
    assert policy.full_list(_readings(changes_most, 0), EXPIRE, Purpose.REVOKE) is None


def test_expires_still_fit_where_creates_and_renews_are_refused() -> None:
    policy = CapacityPolicy(10_000)
    issue_most = policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    revoke_most = policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.REVOKE)
    full = _readings(0, issue_most)
    assert policy.full_list(full, RENEW, Purpose.ISSUE) is ChildList.TOKEN_CHANGES
    assert policy.full_list(full, EXPIRE, Purpose.REVOKE) is None
    assert revoke_most - issue_most == policy.reserve_bytes // 27  # the reserve, in expires
    assert policy.full_list(_readings(0, revoke_most), EXPIRE, Purpose.REVOKE) is ChildList.TOKEN_CHANGES


def test_the_sweep_leaves_half_the_reserve_to_expires() -> None:
    policy = CapacityPolicy(10_000)
    at_issue_limit = ListReading(ChildList.TOKEN_CHANGES, policy.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE))
    sweepable = policy.room(at_issue_limit, Purpose.SWEEP)
    assert sweepable > 0
    after_sweep = ListReading(ChildList.TOKEN_CHANGES, at_issue_limit.entries + sweepable)
    assert policy.room(after_sweep, Purpose.SWEEP) == 0
    assert policy.room(after_sweep, Purpose.REVOKE) >= (policy.reserve_bytes // 2) // 27


def test_a_reading_is_trusted_only_when_recent_and_far_from_the_limit() -> None:
    policy = CapacityPolicy()
    low = ListReading(ChildList.TOKEN_CHANGES, 10)
    # the last reading still trusted: 450,000 bytes (16,666 notifications) below the limit of creates
    trusted_bytes = policy.limit(Purpose.ISSUE) - capacity.TRUSTED_MARGIN_BYTES
    edge = ListReading(ChildList.TOKEN_CHANGES, (trusted_bytes - 88) // 27)
    assert policy.trusted(low, 0, Purpose.ISSUE)
    assert policy.trusted(low, capacity.FRESH_FOR_MS - 1, Purpose.ISSUE)
    assert not policy.trusted(low, capacity.FRESH_FOR_MS, Purpose.ISSUE)
    assert not policy.trusted(low, -1, Purpose.ISSUE)  # a clock that went back
    assert policy.trusted(edge, 0, Purpose.ISSUE)
    assert not policy.trusted(ListReading(ChildList.TOKEN_CHANGES, edge.entries + 1), 0, Purpose.ISSUE)


def test_with_a_small_budget_no_reading_is_trusted() -> None:
    policy = CapacityPolicy(10_000)
    assert not policy.trusted(ListReading(ChildList.TOKEN_CHANGES, 0), 0, Purpose.ISSUE)


def test_a_warning_from_80_percent_of_the_budget() -> None:
    policy = CapacityPolicy(10_000)
    below = ListReading(ChildList.TOKENS, (8_000 - 88) // 26)
    assert not policy.warns(below)
    assert policy.warns(ListReading(ChildList.TOKENS, below.entries + 1))


@pytest.mark.parametrize("budget", [0, -1, 88])
def test_a_budget_that_cannot_hold_an_empty_listing_is_refused(budget: int) -> None:
    with pytest.raises(ValueError, match="88"):
        CapacityPolicy(budget)


def test_a_full_notification_list_names_itself_and_the_time_the_oldest_ages_out() -> None:
    now = 1_700_000_000_000
    oldest = now - 14 * 60 * 1000  # purged one minute from now
    refusal = capacity.exhausted(ChildList.TOKEN_CHANGES, now, capacity.notification_room_expected_ms(oldest))
    assert isinstance(refusal, CapacityExhausted)
    assert refusal.name == "TOKEN_CAPACITY_EXHAUSTED"
    assert "/delegation_token/token_changes" in refusal.message
    assert "2023-11-14T22:14:20Z" in refusal.message
    assert refusal.message.count(".") == 1 and refusal.message.endswith(".")
    assert refusal.retry_after_s == 60


def test_a_full_token_list_names_itself_and_the_next_expiry() -> None:
    now = 1_700_000_000_000
    refusal = capacity.exhausted(ChildList.TOKENS, now, now + 1_500)
    assert "(/delegation_token/tokens)" in refusal.message
    assert "next token expiry at 2023-11-14T22:13:21Z" in refusal.message
    assert refusal.retry_after_s == 2  # rounded up


def test_without_an_estimate_the_refusal_says_so_and_asks_for_a_minute() -> None:
    refusal = capacity.exhausted(ChildList.TOKENS, 0, None)
    assert "when a token is expired or expires" in refusal.message
    assert refusal.retry_after_s == 60
    assert capacity.retry_after_s(10_000, 5_000) == 1  # room already expected: ask again soon
