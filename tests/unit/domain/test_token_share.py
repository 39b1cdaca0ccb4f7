"""The fair-share rules (app/domain/token_share.py) with a fake clock: what a principal's share holds, what
each write adds, how notifications age out of a ledger minute by minute, and the refusal: 429-worthy, with the
seconds until room and the principal's own figures only."""

from __future__ import annotations

import re

import pytest

from app.domain.capacity import DEFAULT_MAX_BYTES
from app.domain.errors import TokenWriteShareExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token_share import (
    COUNTED_FOR_MS,
    MIN_SHARE_BYTES,
    MINUTE_MS,
    ShareLedger,
    SharePolicy,
    ShareWrite,
    ensure_within,
    share_problem,
)
from tests.unit.fakes import FakeClock

U24 = KafkaPrincipal.user("u24")
START = 1_700_000_040_000  # a minute boundary
SHARE = SharePolicy(1_000, 0.05)  # 38 tokens, 37 notification entries


def _refusal(tokens: int, ledger: ShareLedger, write: ShareWrite, now: int) -> TokenWriteShareExceeded:
    with pytest.raises(TokenWriteShareExceeded) as refused:
        ensure_within(SHARE, U24, tokens, ledger, write, now)
    return refused.value


def test_the_default_share_is_a_twentieth_of_the_budget() -> None:
    policy = SharePolicy.of(DEFAULT_MAX_BYTES, 0.05)
    assert policy.share_bytes == 50_000
    assert (policy.max_tokens, policy.max_notifications) == (1_923, 1_851)
    assert not SharePolicy.of(DEFAULT_MAX_BYTES, 0).enabled


@pytest.mark.parametrize("ratio", [-0.1, 1.01])
def test_a_ratio_outside_0_to_1_is_refused(ratio: float) -> None:
    with pytest.raises(ValueError, match=r"token\.write\.share\.ratio"):
        SharePolicy.of(DEFAULT_MAX_BYTES, ratio)
    assert share_problem(DEFAULT_MAX_BYTES, ratio) is not None


def test_a_share_too_small_for_one_create_is_a_configuration_problem_naming_both_figures() -> None:
    assert share_problem(1_000, 0.05) == (
        "0.05 of zookeeper.children.max.bytes=1000 is 50 bytes, less than one create needs (54 bytes); raise it, "
        "or set 0 for no shares"
    )
    assert share_problem(1_080, 0.05) is None  # exactly one create's 54 bytes
    assert share_problem(1_000, 0) is None  # no shares
    assert MIN_SHARE_BYTES == 54


def test_with_shares_off_nothing_is_refused() -> None:
    ensure_within(SharePolicy(0), U24, 10**6, ShareLedger().charged(10**6, START), ShareWrite.CREATE, START)


def test_a_create_costs_a_token_its_notification_and_its_notification_to_come() -> None:
    clock = FakeClock(START)
    ledger, tokens, admitted = ShareLedger(), 0, 0
    while True:
        try:
            ensure_within(SHARE, U24, tokens, ledger, ShareWrite.CREATE, clock.now_ms())
        except TokenWriteShareExceeded:
            break
        ledger, tokens, admitted = ledger.charged(1, clock.now_ms()), tokens + 1, admitted + 1
        clock.advance(100)
    assert admitted == 37 // 2  # two notification entries each: 18


def test_a_change_costs_one_notification() -> None:
    ledger = ShareLedger().charged(35, START)
    ensure_within(SHARE, U24, 1, ledger, ShareWrite.CHANGE, START)  # 35 + 1 to come + 1 = 37
    _refusal(2, ledger, ShareWrite.CHANGE, START)  # 35 + 2 + 1 = 38


def test_tokens_held_bound_the_token_list_share_even_with_no_notification_counted() -> None:
    refusal = _refusal(38, ShareLedger(), ShareWrite.CREATE, START)
    assert refusal.retry_after_s == 60  # no ledger aging frees room: the tokens must go
    assert "room comes once its tokens are gone" in refusal.message


def test_notifications_count_until_their_minute_ends_plus_the_purge_retention_and_a_minute() -> None:
    written = START + 30_000  # mid-minute
    ledger = ShareLedger().charged(5, written)
    assert ledger.minutes == ((START, 5),)
    last_counted = START + MINUTE_MS + COUNTED_FOR_MS - 1  # 17 minutes after the minute began
    assert ledger.notifications(last_counted) == 5
    assert ledger.notifications(last_counted + 1) == 0
    assert last_counted - written >= 16 * MINUTE_MS - 1  # never less than 15 minutes + one purge interval


def test_a_ledger_forgets_minutes_no_longer_counted_and_keeps_them_in_order() -> None:
    clock = FakeClock(START)
    ledger = ShareLedger()
    for _ in range(40):
        ledger = ledger.charged(1, clock.now_ms())
        clock.advance(MINUTE_MS)
    assert len(ledger.minutes) == 17  # the minutes still counted when the last was written
    assert [minute for minute, _ in ledger.minutes] == sorted(minute for minute, _ in ledger.minutes)
    assert ledger.notifications(clock.now_ms()) == 16  # a minute later, the oldest no longer counts


def test_a_refusal_says_when_the_oldest_notifications_free_enough_room() -> None:
    clock = FakeClock(START)
    ledger = ShareLedger().charged(10, clock.now_ms())
    clock.advance(5 * MINUTE_MS)
    ledger = ledger.charged(27, clock.now_ms())
    refusal = _refusal(0, ledger, ShareWrite.CHANGE, clock.now_ms())  # 37 + 1
    first_minute_ages_out = START + MINUTE_MS + COUNTED_FOR_MS
    assert refusal.retry_after_s == (first_minute_ages_out - clock.now_ms()) // 1000  # 12 minutes
    assert "room is expected at 2023-11-14T22:31:00Z" in refusal.message

    clock.now = first_minute_ages_out
    ensure_within(SHARE, U24, 0, ledger, ShareWrite.CHANGE, clock.now_ms())  # 27 + 1: room again


def test_the_refusal_names_the_principal_its_share_and_its_own_figures_only() -> None:
    refusal = _refusal(3, ShareLedger().charged(33, START), ShareWrite.CREATE, START)
    assert refusal.name == "TOKEN_WRITE_SHARE_EXCEEDED"
    assert refusal.message.startswith(
        "The write share of User:u24 is 1000 bytes of each token list (token.write.share.ratio=0.05 of "
        "zookeeper.children.max.bytes) and is used up: its 3 tokens (until swept, expired ones included) take 78 "
        "bytes of /delegation_token/tokens, and its 33 change notifications (until purged) with one to come per "
        "token take 972 bytes of /delegation_token/token_changes"
    )
    assert re.findall(r"User:\w+", refusal.message) == ["User:u24"]
