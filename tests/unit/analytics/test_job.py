"""Whole report runs on hand-made events: every table and the page, the window, determinism."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

from app.analytics import transforms as t
from app.analytics.job import TABLES, run_report
from app.analytics.sources import AnalyticsError
from tests.unit.analytics.events import create, event, events_frame, expire, renew, rows, sweep

H = t.HOUR_MS
D = t.DAY_MS
T0 = 1_700_000_000_000
JOB = ("spark", "app-20231114221320-0001", "nightly <etl>", "joe")


# --- a whole run ---------------------------------------------------------------------------------------


def script(spark: SparkSession) -> DataFrame:
    """Two days of activity: 4 tokens (2 for another owner, by one Spark job), 3 renewals, 1 sweep, 1 lingering
    token, 2 refused requests and a burst of 6 failed logins; a describe two days later gives the burst a baseline."""
    return events_frame(
        spark,
        [
            create(1, T0, "a1", "User:alice", "User:alice", expiry=T0 + H, maximum=T0 + 2 * H),
            create(2, T0 + 1, "b1", "User:bob", "User:svc", requested=6 * H, job=JOB),
            create(3, T0 + 2, "b2", "User:bob", "User:svc", job=JOB),
            create(4, T0 + 3, "c1", "User:carol", "User:carol", expiry=T0 + 3 * H),
            create(5, T0 + 4, None, "User:dave", "User:svc", outcome="denied"),
            renew(6, T0 + 10, "a1", "User:alice", T0 + 2 * H),
            renew(7, T0 + 11, "b1", "User:bob", T0 + 2 * D, requester="User:svc"),
            renew(8, T0 + 12, "b1", "User:bob", T0 + 3 * D, requester="User:svc"),
            sweep(9, T0 + 2 * H + 60_000, "a1", "User:alice", T0 + 2 * H),
            expire(10, T0 + 13, "b2", "User:bob", deleted=True, expiry=T0 + 13, requester="User:svc"),
            event(11, T0 + 14, "token.describe", principal="User:alice"),
            event(12, T0 + 15, "acl.add", "denied", principal="User:bob", error_code=31, client_address="192.0.2.5"),
            *[
                event(
                    20 + i,
                    T0 + 5 * H + i,
                    "authentication",
                    "denied",
                    principal="User:eve",
                    client_address="192.0.2.66",
                )
                for i in range(6)
            ],
            event(30, T0 + 2 * D, "token.describe", principal="User:alice"),
        ],
    )


def test_run_report_writes_every_table_and_a_self_contained_report(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "report"

    summary = run_report(spark, script(spark), out, as_of_ms=T0 + 6 * H)

    assert summary == {
        "events": 19,
        "tokens_issued": 4,
        "impersonated_tokens": 2,
        "impersonation_refused": 1,
        "renewals": 3,
        "refusals": 2,
        "authentication_failures": 6,
        "burst_hours": 1,
        "swept_tokens": 1,
        "expired_tokens": 1,
        "lingering_tokens": 1,
        "jobs": 1,
        "tokens_with_job": 2,
    }
    for name in TABLES:
        assert list((out / name).glob("*.parquet")), name
    assert rows(spark.read.parquet(str(out / "top_owners")), "rank", "owner", "tokens") == [
        (1, "User:bob", 2),
        (2, "User:alice", 1),
        (3, "User:carol", 1),
    ]
    assert rows(spark.read.parquet(str(out / "expiry_compliance")), "token_id", "status", "overdue_ms") == [
        ("a1", "swept", 60_000),
        ("b2", "expired", 0),
        ("c1", "lingering", 3 * H),
    ]
    page = (out / "report.html").read_text(encoding="utf-8")
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', page)
    assert len(images) == 10  # 2 daily, matrix, lifetimes, 2 renewal, overdue, 2 denial, bursts
    assert page.count("<img") == len(images)
    assert not re.search(r"https?://|<script|<link|url\(|src=\"(?!data:)", page)
    assert '<dd id="summary-tokens_issued">4</dd>' in page
    assert "User:eve" in page
    assert "2023-11-15 04:13:20 UTC" in page  # the as-of time
    by_job = spark.read.parquet(str(out / "tokens_by_job"))
    assert rows(by_job, "job_framework", "job_id", "job_name", "job_user", "tokens", "first_at", "last_at") == [
        (*JOB, 2, T0 + 1, T0 + 2)
    ]
    tokens_by_job = page[page.index('<table id="tokens-by-job">') :]
    assert "<td>app-20231114221320-0001</td><td>nightly &lt;etl&gt;</td><td>joe</td>" in tokens_by_job  # escaped


def test_tokens_are_judged_as_of_the_newest_event_unless_told(spark: SparkSession, tmp_path: Path) -> None:
    run_report(spark, script(spark), tmp_path / "report")

    compliance = spark.read.parquet(str(tmp_path / "report" / "expiry_compliance"))
    assert ("c1", "lingering", 2 * D - 3 * H) in rows(compliance, "token_id", "status", "overdue_ms")


def test_two_runs_on_one_input_write_identical_tables_and_pages(spark: SparkSession, tmp_path: Path) -> None:
    events = script(spark)
    first = run_report(spark, events, tmp_path / "first", top_n=2)
    second = run_report(spark, events, tmp_path / "second", top_n=2)

    assert first == second
    for name in TABLES:
        table = spark.read.parquet(str(tmp_path / "first" / name))
        again = spark.read.parquet(str(tmp_path / "second" / name))
        assert rows(table, *table.columns) == rows(again, *table.columns), name
    page = (tmp_path / "first" / "report.html").read_bytes()
    assert page == (tmp_path / "second" / "report.html").read_bytes()


def test_run_report_on_no_events_writes_empty_tables(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "empty"

    summary = run_report(spark, events_frame(spark, []), out, since_ms=T0, until_ms=T0 + D)

    assert set(summary.values()) == {0}
    for name in TABLES:
        assert spark.read.parquet(str(out / name)).count() == 0, name
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<img" not in page
    assert "No data in this period." in page


def test_run_report_counts_only_the_window(spark: SparkSession, tmp_path: Path) -> None:
    summary = run_report(spark, script(spark), tmp_path / "late", since_ms=T0 + H, until_ms=T0 + 6 * H)

    # Left: the sweep of a1, the 6 failed logins; c1 expired at T0 + 3 h and lingers at the last of them.
    assert (summary["events"], summary["tokens_issued"], summary["swept_tokens"]) == (7, 0, 1)
    assert (summary["authentication_failures"], summary["lingering_tokens"], summary["renewals"]) == (6, 1, 0)


def test_run_report_refuses_an_empty_window(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalyticsError, match="since must be before until"):
        run_report(spark, script(spark), tmp_path, since_ms=T0, until_ms=T0)


def test_per_token_ids_and_times_are_written_without_a_dictionary(spark: SparkSession, tmp_path: Path) -> None:
    """All but distinct in a real trail, those columns would fill a dictionary only to drop it; the few
    repeated ones (owners, requesters) keep theirs."""
    run_report(spark, script(spark), tmp_path / "report")

    for name, plain, repeated in (("token_lifecycle", "created_at", "owner"), ("token_renewals", "token_id", "owner")):
        parts = list((tmp_path / "report" / name).glob("*.parquet"))
        assert parts
        for part in parts:
            chunks = pq.ParquetFile(part).metadata.row_group(0)
            encodings = {chunks.column(i).path_in_schema: chunks.column(i).encodings for i in range(chunks.num_columns)}
            assert not any("DICTIONARY" in encoding for encoding in encodings[plain] + encodings["token_id"])
            assert any("DICTIONARY" in encoding for encoding in encodings[repeated])
