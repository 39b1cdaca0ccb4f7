"""Issuance, impersonation, lifetimes and renewals on hand-made events, against hand-computed answers."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from app.analytics import transforms as t
from app.analytics.events_schema import EVENT_COLUMNS
from tests.unit.analytics.events import create, event, events_frame, expire, renew, rows, sweep

H = t.HOUR_MS
D = t.DAY_MS
DETAILS = EVENT_COLUMNS.index("details")
T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def with_details(row: tuple[Any, ...], details: str) -> tuple[Any, ...]:
    """``row`` with its ``details`` text replaced as is (not JSON-encoded)."""
    return (*row[:DETAILS], details, *row[DETAILS + 1 :])


def test_in_window_keeps_since_inclusive_until_exclusive(spark: SparkSession) -> None:
    events = events_frame(spark, [event(i, ts, "token.describe") for i, ts in enumerate((100, 200, 300))])

    assert rows(t.in_window(events, since_ms=200, until_ms=300), "timestamp") == [(200,)]
    assert rows(t.in_window(events, until_ms=300), "timestamp") == [(100,), (200,)]
    assert rows(t.in_window(events), "timestamp") == [(100,), (200,), (300,)]


def test_token_lifecycle_parses_each_tokens_settled_changes_into_one_row(spark: SparkSession) -> None:
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:a", "User:svc", requested=3 * H, issue=T0, expiry=T0 + H, maximum=T0 + 3 * H),
            renew(2, T0 + 10, "t1", "User:a", T0 + 2 * H, requester="User:svc"),
            renew(3, T0 + 20, "t1", "User:a", T0 + 90 * 60_000, requester="User:svc"),  # shortened it
            expire(4, T0 + 30, "t1", "User:a", deleted=True, expiry=T0 + 30, requester="User:svc"),
            sweep(5, T0 + 40, "t1", "User:a", T0 + 40, requester="User:svc"),  # after its removal: not one
            create(6, T0, "t2", "User:b", "User:b", outcome="pending"),
            renew(7, T0, "t1", "User:a", T0 + 5 * H, outcome="failed", requester="User:svc"),
            event(8, T0, "token.describe", token_id="t1"),
            with_details(sweep(9, T0 + 50, "t3", "User:c", T0), "not json"),
        ],
    )

    found = {row["token_id"]: row.asDict() for row in t.token_lifecycle(events).collect()}

    assert set(found) == {"t1", "t3"}
    assert found["t1"] == {
        "token_id": "t1",
        "owner": "User:a",
        "token_requester": "User:svc",
        "created_at": T0,
        "requested_max_lifetime_ms": 3 * H,
        "issue_timestamp": T0,
        "max_timestamp": T0 + 3 * H,
        "issued_expiry_timestamp": T0 + H,
        "renewals": 2,
        "last_renewed_at": T0 + 20,
        "renewed_expiry_timestamp": T0 + 90 * 60_000,
        "last_expiry_timestamp": T0 + 90 * 60_000,
        "removed_at": T0 + 30,
        "removed_by_sweep": False,
        "removal_expiry_timestamp": T0 + 30,
        "job_framework": None,
        "job_id": None,
        "job_name": None,
        "job_user": None,
    }
    malformed = found["t3"]
    assert (malformed["created_at"], malformed["removed_at"], malformed["removed_by_sweep"]) == (None, T0 + 50, True)
    assert malformed["removal_expiry_timestamp"] is None


def test_token_lifecycle_orders_changes_of_the_same_millisecond_by_id(spark: SparkSession) -> None:
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:a", "User:a"),
            renew(3, T0 + 5, "t1", "User:a", T0 + 3 * H),
            renew(2, T0 + 5, "t1", "User:a", T0 + 2 * H),
        ],
    )

    (row,) = t.token_lifecycle(events).collect()

    assert (row["renewals"], row["renewed_expiry_timestamp"]) == (2, T0 + 3 * H)


def test_issued_per_day_by_owner_and_by_requester(spark: SparkSession) -> None:
    creations = t.issued(
        t.token_lifecycle(
            events_frame(
                spark,
                [
                    create(1, T0, "t1", "User:bob", "User:svc"),
                    create(2, T0 + H, "t2", "User:bob", "User:bob"),
                    create(3, T0 + 2 * H, "t3", "User:alice", "User:svc"),  # 2023-11-15 00:13 UTC
                    create(4, T0 + 2 * H, "t4", "User:bob", "User:svc"),
                    create(5, T0, None, "User:bob", "User:svc", outcome="denied"),
                    renew(6, T0 + 3 * H, "t0", "User:carol", T0 + D),  # created before the history
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

    matrix = t.impersonation_matrix(t.issued(t.token_lifecycle(events)), t.denials(t.overview(events)))

    assert rows(matrix, "token_requester", "owner", "tokens", "refused") == [
        ("User:svc", "User:bob", 2, 0),
        ("User:svc", "User:carol", 0, 1),
    ]


def test_lifetime_distribution_buckets_requested_and_granted_lifetimes(spark: SparkSession) -> None:
    creations = t.issued(
        t.token_lifecycle(
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
    history = t.token_lifecycle(
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
        ),
        since_ms=since,
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


def test_tokens_by_job_counts_each_jobs_tokens_with_its_first_and_last(spark: SparkSession) -> None:
    etl = ("spark", "app-1", "nightly-etl", "joe")
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:a", "User:svc", job=etl),
            create(2, T0 + H, "t2", "User:a", "User:svc", job=etl),
            create(3, T0 + 2 * H, "t3", "User:b", "User:svc", job=("spark", "app-1", "nightly-etl", "ann")),
            create(4, T0 + 3 * H, "t4", "User:b", "User:svc", job=("flink", None, None, None)),
            create(5, T0 + 4 * H, "t5", "User:c", "User:c"),  # no job: not in the table
            create(6, T0 + 5 * H, None, "User:c", "User:svc", outcome="denied", job=etl),  # never issued
            renew(7, T0 + 6 * H, "t1", "User:a", T0 + 2 * D, requester="User:svc"),  # a renewal is no new token
            create(8, T0 - D, "t0", "User:a", "User:svc", job=etl),  # before the window
        ],
    )
    lifecycle = t.token_lifecycle(events, since_ms=T0)
    assert rows(lifecycle.filter("token_id = 't1'"), "job_framework", "job_id", "job_name", "job_user") == [etl]

    found = t.tokens_by_job(t.issued(lifecycle, since_ms=T0))

    assert rows(found, "job_framework", "job_id", "job_name", "job_user", "tokens", "first_at", "last_at") == [
        ("flink", None, None, None, 1, T0 + 3 * H, T0 + 3 * H),
        ("spark", "app-1", "nightly-etl", "ann", 1, T0 + 2 * H, T0 + 2 * H),
        ("spark", "app-1", "nightly-etl", "joe", 2, T0, T0 + H),
    ]


def test_token_lifecycle_joins_each_job_back_to_its_own_tokens_row(spark: SparkSession) -> None:
    """The job's columns are joined back to the hashed figures by token: owner and requester must match
    too, null matching null, and a change that names no job (a renew) leaves the create's job alone."""
    etl = ("spark", "app-1", "nightly-etl", "joe")
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", None, "User:svc", job=etl),  # no owner recorded: matches null-safely
            renew(2, T0 + H, "t1", None, T0 + 2 * D, requester="User:svc"),
            create(3, T0, "t2", "User:a", "User:svc", job=etl),
            create(4, T0 + H, "t2", "User:b", "User:svc"),  # the same id under another owner: another row
            create(5, T0, "t3", "User:c", "User:c"),
        ],
    )

    found = t.token_lifecycle(events, since_ms=T0)

    assert found.columns[-4:] == ["job_framework", "job_id", "job_name", "job_user"]
    assert rows(found, "token_id", "owner", "renewals", "job_framework", "job_id", "job_name", "job_user") == [
        ("t1", None, 1, *etl),
        ("t2", "User:a", 0, *etl),
        ("t2", "User:b", 0, None, None, None, None),
        ("t3", "User:c", 0, None, None, None, None),
    ]


def test_token_lifecycle_takes_the_job_of_the_tokens_last_create_whole(spark: SparkSession) -> None:
    """A token created twice under the same owner and requester is one row: its job is the one its last
    create named, every field from that create (none when it named none), never mixed with another's."""
    events = events_frame(
        spark,
        [
            create(1, T0, "t1", "User:a", "User:svc", job=("spark", "app-2", "a", "zed")),
            create(2, T0 + H, "t1", "User:a", "User:svc", job=("flink", "app-1", "b", None)),
            create(3, T0, "t2", "User:a", "User:svc", job=("spark", "app-3", "c", "ann")),
            create(4, T0 + H, "t2", "User:a", "User:svc"),
            create(5, T0 + 2 * H, "t3", "User:a", "User:svc", outcome="denied", job=("spark", "app-4", "d", "x")),
            create(6, T0 + 2 * H, "t3", "User:a", "User:svc"),
        ],
    )

    found = t.token_lifecycle(events, since_ms=T0)

    assert rows(found, "token_id", "created_at", "job_framework", "job_id", "job_name", "job_user") == [
        ("t1", T0 + H, "flink", "app-1", "b", None),
        ("t2", T0 + H, None, None, None, None),
        ("t3", T0 + 2 * H, None, None, None, None),
    ]
