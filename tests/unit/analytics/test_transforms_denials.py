"""Refusals, authentication failures and bursts against each principal's own baseline."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from app.analytics import transforms as t
from tests.unit.analytics.events import event, events_frame, rows

H = t.HOUR_MS
T0 = 1_699_999_200_000  # 2023-11-14 22:00:00 UTC, on the hour


def failed_login(event_id: int, at: int, principal: str | None, address: str = "192.0.2.1") -> tuple[Any, ...]:
    return event(
        event_id,
        at,
        "authentication",
        "denied",
        principal=principal,
        client_address=address,
        details={"scheme": "basic", "reason": "wrong password"},
    )


def denied(spark: SparkSession, rows_: list[tuple[Any, ...]]) -> DataFrame:
    return t.denials(t.overview(events_frame(spark, rows_)))


def test_denials_tell_refusals_from_authentication_failures(spark: SparkSession) -> None:
    events = events_frame(
        spark,
        [
            failed_login(1, T0, "User:m"),
            event(2, T0, "token.create", "denied", principal="User:svc", owner="User:x", error_code=65),
            event(3, T0, "token.verify", "denied", principal="User:svc", owner="User:x"),
            event(4, T0, "token.create", "succeeded", principal="User:svc"),
            event(5, T0, "token.renew", "failed", principal="User:svc"),
            failed_login(6, T0 - 1, "User:m"),  # before the window: only counted
        ],
    )
    overview = t.overview(events, since_ms=T0)

    assert rows(t.denials(overview), "kind", "action", "owner", "events", "denials") == [
        ("authentication", "authentication", None, 1, 1),
        ("refusal", "token.create", "User:x", 1, 1),
        ("refusal", "token.verify", None, 1, 1),  # only creates keep their owner
    ]
    (span,) = t.span(overview).collect()
    assert span.asDict() == {
        "events": 5,
        "denied_events": 3,
        "first_at": T0,
        "last_at": T0,
        "history_events": 6,
        "newest_at": T0,
    }


def test_denials_by_principal_and_by_action(spark: SparkSession) -> None:
    denied_ = denied(
        spark,
        [
            failed_login(1, T0 + 5, "User:m", "192.0.2.7"),
            failed_login(2, T0 + 9, "User:m", "192.0.2.7"),
            failed_login(3, T0 + 7, "User:m", "198.51.100.3"),
            failed_login(4, T0 + 1, None, "192.0.2.7"),
            event(5, T0 + 2, "token.create", "denied", principal="User:svc", client_address="192.0.2.9", error_code=65),
            event(6, T0 + 3, "token.renew", "denied", principal="User:svc", client_address="192.0.2.9", error_code=65),
            event(7, T0 + 4, "acl.add", "denied", principal="User:svc", client_address="192.0.2.9", error_code=31),
        ],
    )

    assert rows(
        t.denials_by_principal(denied_), "kind", "principal", "client_address", "denials", "first_at", "last_at"
    ) == [
        ("authentication", None, "192.0.2.7", 1, T0 + 1, T0 + 1),
        ("authentication", "User:m", "192.0.2.7", 2, T0 + 5, T0 + 9),
        ("authentication", "User:m", "198.51.100.3", 1, T0 + 7, T0 + 7),
        ("refusal", "User:svc", "192.0.2.9", 3, T0 + 2, T0 + 4),
    ]
    assert rows(t.refusals_by_action(denied_), "kind", "action", "error_code", "denials") == [
        ("authentication", "authentication", None, 4),
        ("refusal", "acl.add", 31, 1),
        ("refusal", "token.create", 65, 1),
        ("refusal", "token.renew", 65, 1),
    ]


@pytest.mark.parametrize(
    ("start", "end", "hours"),
    [(0, 1, 1), (0, H, 1), (0, H + 1, 2), (H // 2, H + H // 2, 2), (5 * H, 5 * H, 1), (0, 10 * H, 10)],
)
def test_span_hours_counts_the_clock_hours_touched(start: int, end: int, hours: int) -> None:
    assert t.span_hours(start, end) == hours


def test_bursts_are_judged_against_the_principals_other_hours(spark: SparkSession) -> None:
    rows_: list[tuple[Any, ...]] = []

    def logins(principal: str | None, hour: int, count: int) -> None:
        for _ in range(count):
            rows_.append(failed_login(len(rows_) + 1, T0 + hour * H + len(rows_), principal))

    logins("User:a", 0, 12)  # a spike over a quiet baseline
    logins("User:a", 3, 1)
    for hour in range(30):
        logins("User:steady", hour, 6)  # the same every hour: never a burst
    logins("User:c", 4, 4)  # a spike below the minimum
    logins(None, 2, 7)  # failed logins that claimed no principal

    found = t.denial_bursts(denied(spark, rows_), span_start_ms=T0, span_end_ms=T0 + 30 * H, stddevs=3.0)

    by_key = {(row["principal"], row["hour_start"]): row for row in found.collect()}
    assert len(by_key) == 2 + 30 + 1 + 1
    spike = by_key[("User:a", T0)]
    # Other 29 hours of User:a: one hour with 1, 28 with 0.
    assert spike["denials"] == 12
    assert spike["hour"] == "2023-11-14 22:00"
    assert spike["baseline_mean"] == pytest.approx(1 / 29)
    assert spike["baseline_stddev"] == pytest.approx(math.sqrt(1 / 29 - 1 / 29**2))
    assert spike["threshold"] == 4.0  # the floor: mean + 3 stddev is below it
    quiet = by_key[("User:a", T0 + 3 * H)]
    # Other 29 hours: one with 12, 28 with 0.
    assert quiet["baseline_mean"] == pytest.approx(12 / 29)
    assert quiet["threshold"] == pytest.approx(12 / 29 + 3 * math.sqrt(144 / 29 - (12 / 29) ** 2))
    steady = by_key[("User:steady", T0 + 5 * H)]
    assert (steady["baseline_mean"], steady["baseline_stddev"], steady["threshold"]) == pytest.approx((6, 0, 6))
    assert sorted(((p or ""), h) for (p, h), row in by_key.items() if row["is_burst"]) == [
        ("", T0 + 2 * H),
        ("User:a", T0),
    ]


@pytest.mark.parametrize("span_ms", [60_000, t.BURST_BASELINE_HOURS * H])
def test_a_span_too_short_for_a_baseline_flags_nothing(spark: SparkSession, span_ms: int) -> None:
    logins = [failed_login(i, T0 + i, "User:a") for i in range(1, 50)]

    found = t.denial_bursts(denied(spark, logins), span_start_ms=T0, span_end_ms=T0 + span_ms)

    (row,) = found.collect()
    assert (row["principal"], row["denials"], row["threshold"], row["is_burst"]) == ("User:a", 49, None, False)
    if span_ms == 60_000:
        assert (row["baseline_mean"], row["baseline_stddev"]) == (None, None)  # no other hour at all


def test_a_baseline_of_enough_hours_judges(spark: SparkSession) -> None:
    logins = [failed_login(i, T0 + i, "User:a") for i in range(1, 50)]

    span_end = T0 + (t.BURST_BASELINE_HOURS + 1) * H
    (row,) = t.denial_bursts(denied(spark, logins), span_start_ms=T0, span_end_ms=span_end).collect()

    assert (row["baseline_mean"], row["threshold"], row["is_burst"]) == (0.0, 4.0, True)


def test_a_throttled_burst_counts_every_attempt_its_summary_rows_stand_for(spark: SparkSession) -> None:
    """The brute-force defence writes a burst's first failure in full, then summaries with
    ``details.attempts``: 1 + 6 + 3 attempts from one address, however few rows they took."""
    summary = {"throttled": True, "scheme": "basic", "reason": "Too many failed attempts."}
    denied_ = denied(
        spark,
        [
            failed_login(1, T0, "User:m"),
            event(2, T0 + 60_000, "authentication", "denied", principal="User:m", client_address="192.0.2.1",
                  details={**summary, "attempts": 6}),
            event(3, T0 + 120_000, "authentication", "denied", principal="User:m", client_address="192.0.2.1",
                  details={**summary, "attempts": 3}),
        ],
    )  # fmt: skip
    assert rows(t.denials_by_principal(denied_), "principal", "denials") == [("User:m", 10)]
    assert rows(t.refusals_by_action(denied_), "kind", "denials") == [("authentication", 10)]
    hourly = t.denial_bursts(denied_, span_start_ms=T0, span_end_ms=T0 + H, min_denials=5)
    assert rows(hourly, "principal", "denials") == [("User:m", 10)]
