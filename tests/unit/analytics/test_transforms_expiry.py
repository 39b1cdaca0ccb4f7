"""Expiry compliance: sweep lag, deletions by request and lingering tokens, against hand-computed answers."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from app.analytics import transforms as t
from tests.unit.analytics.events import create, events_frame, expire, renew, rows, sweep

H = t.HOUR_MS
D = t.DAY_MS
M = t.MINUTE_MS
T0 = 1_700_000_000_000
NOW = T0 + 10 * D


@pytest.fixture
def history(spark: SparkSession) -> DataFrame:
    return t.token_lifecycle(
        events_frame(
            spark,
            [
                # t1: swept 30 min after its expiry
                create(1, T0, "t1", "User:a", "User:a", expiry=T0 + H),
                sweep(2, T0 + H + 30 * M, "t1", "User:a", T0 + H),
                # t2: renewed, then never removed: lingering at NOW
                create(3, T0, "t2", "User:b", "User:b", expiry=T0 + H),
                renew(4, T0 + 30 * M, "t2", "User:b", T0 + 5 * H),
                # t3: deleted by an expire request while still valid
                create(5, T0, "t3", "User:c", "User:c", expiry=T0 + D),
                expire(6, T0 + 2 * H, "t3", "User:c", deleted=True, expiry=T0 + 2 * H),
                # t4: still valid at NOW: not listed
                create(7, T0, "t4", "User:d", "User:d", expiry=T0 + 20 * D, maximum=T0 + 30 * D),
                # t5: shortened by an expire request, then swept 80 min after the new expiry
                create(8, T0, "t5", "User:e", "User:e", expiry=T0 + H),
                expire(9, T0 + 30 * M, "t5", "User:e", deleted=False, expiry=T0 + 40 * M),
                sweep(10, T0 + 2 * H, "t5", "User:e", T0 + 40 * M),
                # t6: created before the history began, swept an hour late
                sweep(11, T0 + 5 * H, "t6", "User:old", T0 + 4 * H),
                # t7: created before the history began, deleted by request
                expire(12, T0 + H, "t7", "User:f", deleted=True, expiry=T0 + H),
                # refused attempts change nothing
                expire(13, T0 + H, "t2", "User:x", deleted=True, expiry=T0 + H, outcome="denied"),
            ],
        )
    )


def test_expiry_compliance_lists_every_token_that_outlived_its_expiry(history: DataFrame) -> None:
    found = t.expiry_compliance(history, as_of_ms=NOW)

    assert rows(found, "token_id", "owner", "status", "expiry_timestamp", "removed_at", "overdue_ms") == [
        ("t1", "User:a", "swept", T0 + H, T0 + H + 30 * M, 30 * M),
        ("t2", "User:b", "lingering", T0 + 5 * H, None, NOW - (T0 + 5 * H)),
        ("t3", "User:c", "expired", T0 + D, T0 + 2 * H, 0),
        ("t5", "User:e", "swept", T0 + 40 * M, T0 + 2 * H, 80 * M),
        ("t6", "User:old", "swept", T0 + 4 * H, T0 + 5 * H, H),
        ("t7", "User:f", "expired", T0 + H, T0 + H, 0),
    ]


def test_expiry_compliance_counts_removals_in_the_window_and_every_lingering_token(history: DataFrame) -> None:
    found = t.expiry_compliance(history, as_of_ms=NOW, since_ms=T0 + 90 * M)

    assert rows(found, "token_id") == [("t1",), ("t2",), ("t3",), ("t5",), ("t6",)]


def test_a_token_expiring_exactly_at_the_as_of_time_is_not_yet_lingering(history: DataFrame) -> None:
    found = t.expiry_compliance(history, as_of_ms=T0 + 5 * H)

    assert "t2" not in {row[0] for row in rows(found, "token_id")}


def test_overdue_distribution_buckets_by_status(history: DataFrame) -> None:
    found = t.overdue_distribution(t.expiry_compliance(history, as_of_ms=NOW))

    assert rows(found, "status", "bucket_order", "bucket", "tokens") == [
        ("expired", 1, "< 1 min", 2),
        ("lingering", 5, ">= 1 d", 1),
        ("swept", 2, "1 min - 1 h", 1),
        ("swept", 3, "1 h - 6 h", 2),
    ]
