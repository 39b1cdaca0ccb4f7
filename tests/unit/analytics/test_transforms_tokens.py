"""Issuance, impersonation, lifetimes and renewals on hand-made events, against hand-computed answers."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from app.analytics import transforms as t
from tests.unit.analytics.events import create, event, events_frame, renew, rows

H = t.HOUR_MS
D = t.DAY_MS
T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def test_in_window_keeps_since_inclusive_until_exclusive(spark: SparkSession) -> None:
    events = events_frame(spark, [event(i, ts, "token.describe") for i, ts in enumerate((100, 200, 300))])

    assert rows(t.in_window(events, since_ms=200, until_ms=300), "timestamp") == [(200,)]
    assert rows(t.in_window(events, until_ms=300), "timestamp") == [(100,), (200,)]
    assert rows(t.in_window(events), "timestamp") == [(100,), (200,), (300,)]


def test_with_details_parses_the_fields_and_the_utc_day(spark: SparkSession) -> None:
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:a", "User:a", requested=3 * H, issue=T0, expiry=T0 + H, maximum=T0 + 3 * H),
            event(2, T0 - 80_000_001, "authentication", "denied", details={"scheme": "basic", "reason": "bad"}),
            event(3, T0, "token.expire", details={"expiryTimePeriodMs": -1, "expiryTimestamp": T0, "deleted": True}),
            (*event(4, 0, "token.verify")[:-1], "not json"),  # details is the last column
        ],
    )
    parsed = t.with_details(events)

    assert rows(
        parsed,
        "id",
        "date",
        "requested_max_lifetime_ms",
        "issue_timestamp",
        "expiry_timestamp",
        "max_timestamp",
        "deleted",
        "scheme",
        "reason",
    ) == [
        (1, "2023-11-14", 3 * H, T0, T0 + H, T0 + 3 * H, None, None, None),
        (2, "2023-11-13", None, None, None, None, None, "basic", "bad"),
        (3, "2023-11-14", None, None, T0, None, True, None, None),
        (4, "1970-01-01", None, None, None, None, None, None, None),
    ]


def test_report_events_keeps_settled_token_changes_and_every_denial(spark: SparkSession) -> None:
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:a", "User:a"),
            create(2, T0, "t2", "User:a", "User:a", outcome="pending"),
            renew(3, T0, "t1", "User:a", T0 + D),
            renew(4, T0, "t1", "User:a", T0 + D, outcome="failed"),
            event(5, T0, "token.expire", details={"deleted": True}),
            event(6, T0, "token.sweep"),
            event(7, T0, "token.describe"),
            event(8, T0, "acl.add"),
            event(9, T0, "acl.add", "denied", error_code=31),
            event(10, T0, "authentication", "denied"),
            event(11, T0, "token.verify", "denied"),
        ],
    )

    assert rows(t.report_events(events), "id") == [(1,), (3,), (5,), (6,), (9,), (10,), (11,)]


def test_issued_per_day_by_owner_and_by_requester(spark: SparkSession) -> None:
    creations = t.token_creations(
        t.with_details(
            events_frame(
                spark,
                [
                    create(1, T0, "t1", "User:bob", "User:svc"),
                    create(2, T0 + H, "t2", "User:bob", "User:bob"),
                    create(3, T0 + 2 * H, "t3", "User:alice", "User:svc"),  # 2023-11-15 00:13 UTC
                    create(4, T0 + 2 * H, "t4", "User:bob", "User:svc"),
                    create(5, T0, None, "User:bob", "User:svc", outcome="denied"),
                ],
            )
        )
    )

    assert rows(t.issued_per_day(creations, "owner"), "date", "owner", "tokens") == [
        ("2023-11-14", "User:bob", 2),
        ("2023-11-15", "User:alice", 1),
        ("2023-11-15", "User:bob", 1),
    ]
    assert rows(t.issued_per_day(creations, "token_requester"), "date", "token_requester", "tokens") == [
        ("2023-11-14", "User:bob", 1),
        ("2023-11-14", "User:svc", 1),
        ("2023-11-15", "User:svc", 2),
    ]


def test_impersonation_matrix_counts_issued_and_refused_creates_for_other_owners(spark: SparkSession) -> None:
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:bob", "User:svc"),
            create(2, T0, "t2", "User:bob", "User:svc"),
            create(3, T0, None, "User:carol", "User:svc", outcome="denied"),
            create(4, T0, "t4", "User:alice", "User:alice"),  # for itself: not impersonation
            create(5, T0, "t5", "User:bob", "User:svc", outcome="pending"),
            create(6, T0, "t6", "User:bob", "User:svc", outcome="failed"),
        ],
    )

    assert rows(t.impersonation_matrix(events), "token_requester", "owner", "tokens", "refused") == [
        ("User:svc", "User:bob", 2, 0),
        ("User:svc", "User:carol", 0, 1),
    ]


def test_lifetime_distribution_buckets_requested_and_granted_lifetimes(spark: SparkSession) -> None:
    creations = t.token_creations(
        t.with_details(
            events_frame(
                spark,
                [
                    create(1, T0, "t1", "User:a", "User:a", requested=-1, maximum=T0 + 7 * D),
                    create(2, T0, "t2", "User:a", "User:a", requested=30 * 60_000, maximum=T0 + 30 * 60_000),
                    create(3, T0, "t3", "User:a", "User:a", requested=2 * D, maximum=T0 + H),
                    create(4, T0, "t4", "User:a", "User:a", requested=0, maximum=T0 + 7 * D),
                ],
            )
        )
    )

    found = rows(t.lifetime_distribution(creations), "kind", "bucket_order", "bucket", "lower_ms", "upper_ms", "tokens")

    assert found == [
        ("granted", 1, "< 1 h", 0, H, 1),
        ("granted", 2, "1 h - 6 h", H, 6 * H, 1),
        ("granted", 5, "7 d - 30 d", 7 * D, 30 * D, 2),
        ("requested", 0, t.SERVER_DEFAULT, None, None, 2),
        ("requested", 1, "< 1 h", 0, H, 1),
        ("requested", 4, "1 d - 7 d", D, 7 * D, 1),
    ]


def test_token_renewals_join_window_renewals_to_their_create_in_the_history(spark: SparkSession) -> None:
    since = T0 + 10 * H
    history = t.with_details(
        events_frame(
            spark,
            [
                create(1, T0, "A", "User:a", "User:a", expiry=T0 + D, maximum=T0 + 7 * D),
                renew(2, T0 + 11 * H, "A", "User:a", T0 + 3 * D),
                renew(3, T0 + 12 * H, "A", "User:a", T0 + 2 * D),  # the last renewal shortened it
                renew(4, T0 + 14 * H, "A", "User:a", T0 + 6 * D, outcome="failed"),
                create(5, T0 + 11 * H, "B", "User:b", "User:svc", expiry=T0 + 11 * H + D, maximum=T0 + 11 * H + 2 * D),
                create(6, T0, "C", "User:c", "User:c"),
                renew(7, T0 + H, "C", "User:c", T0 + 2 * D),  # before the window
                renew(8, T0 + 13 * H, "D", "User:dan", T0 + 20 * H),  # created before the history began
            ],
        )
    )

    found = t.token_renewals(history, since_ms=since)

    assert rows(
        found,
        "token_id",
        "owner",
        "token_requester",
        "created_at",
        "renewals",
        "last_renewed_at",
        "max_timestamp",
        "expiry_timestamp",
        "headroom_ms",
    ) == [
        ("A", "User:a", "User:a", T0, 2, T0 + 12 * H, T0 + 7 * D, T0 + 2 * D, 5 * D),
        ("B", "User:b", "User:svc", T0 + 11 * H, 0, None, T0 + 11 * H + 2 * D, T0 + 11 * H + D, D),
        ("D", "User:dan", "User:dan", None, 1, T0 + 13 * H, None, T0 + 20 * H, None),
    ]
    used = dict(rows(found, "token_id", "max_lifetime_used"))
    assert used["A"] == pytest.approx(2 / 7)
    assert used["B"] == pytest.approx(0.5)
    assert used["D"] is None
    assert rows(t.renew_count_distribution(found), "renewals", "tokens") == [(0, 1), (1, 1), (2, 1)]


def test_max_lifetime_use_buckets_renewed_tokens_only(spark: SparkSession) -> None:
    renewals = spark.createDataFrame(
        [(1, 0.2), (3, 0.5), (1, 0.9), (2, 1.0), (4, 1.0), (0, 0.95), (5, None), (1, 0.7499)],
        "renewals long, max_lifetime_used double",
    )

    assert rows(t.max_lifetime_use(renewals), "bucket_order", "bucket", "tokens") == [
        (1, "< 50 %", 1),
        (2, "50 - 75 %", 2),
        (4, "90 - 100 %", 1),
        (5, "at max", 2),
    ]
