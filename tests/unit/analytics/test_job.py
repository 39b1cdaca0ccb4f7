"""The job's edges: database URLs as JDBC, reading the exported layout, and a whole report run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from app.analytics import transforms as t
from app.analytics.events_schema import EVENT_COLUMNS, EVENT_SCHEMA, partition_date_column
from app.analytics.job import TABLES, AnalyticsError, jdbc_source, read_events, run_report
from bench.audit_synth import synthesize
from tests.unit.analytics.events import create, event, events_frame, expire, renew, rows, sweep

H = t.HOUR_MS
D = t.DAY_MS
T0 = 1_700_000_000_000


# --- database URLs -------------------------------------------------------------------------------------


def test_sqlite_url_becomes_a_jdbc_url_to_the_absolute_file(tmp_path: Path) -> None:
    database = tmp_path / "audit.db"
    database.touch()

    source = jdbc_source(f"sqlite:///{database}")

    assert source.url == f"jdbc:sqlite:{database}"
    assert source.properties == {"driver": "org.sqlite.JDBC"}


def test_postgresql_url_keeps_the_password_out_of_url_and_text() -> None:
    source = jdbc_source("postgresql+psycopg://kts:s3cr%40t@db.example.com:6543/audit?sslmode=require")

    assert source.url == "jdbc:postgresql://db.example.com:6543/audit"
    assert source.properties == {
        "driver": "org.postgresql.Driver",
        "user": "kts",
        "password": "s3cr@t",
        "sslmode": "require",
    }
    assert "s3cr" not in str(source)
    assert "s3cr" not in repr(source)
    assert jdbc_source("postgresql://kts@[2001:db8::1]/audit").url == "jdbc:postgresql://[2001:db8::1]:5432/audit"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://kts@db.example.com/audit", "unsupported audit database"),
        ("not a url", "SQLAlchemy URL"),
        ("sqlite://", "names no SQLite database"),
        ("sqlite:///no/such/audit.db", "does not exist"),
        ("postgresql://kts:pw@db.example.com", "names no database"),
    ],
)
def test_unusable_database_urls_are_refused_in_one_line(url: str, message: str) -> None:
    with pytest.raises(AnalyticsError, match=message) as raised:
        jdbc_source(url)
    assert "\n" not in str(raised.value)
    assert ":pw@" not in str(raised.value)


# --- reading the exported layout -----------------------------------------------------------------------


def test_read_events_reads_the_date_partitioned_export(spark: SparkSession, tmp_path: Path) -> None:
    events = events_frame(spark, [event(1, T0, "token.describe"), event(2, T0 + D, "authentication", "denied")])
    events.withColumn("date", partition_date_column()).write.partitionBy("date").parquet(str(tmp_path / "audit"))
    assert sorted(path.name for path in (tmp_path / "audit").glob("date=*")) == [
        "date=2023-11-14",
        "date=2023-11-15",
    ]

    found = read_events(spark, input_dir=tmp_path / "audit")

    assert found.columns == list(EVENT_COLUMNS)
    assert [field.dataType for field in found.schema.fields] == [field.dataType for field in EVENT_SCHEMA.fields]
    assert rows(found, "id", "timestamp", "action") == [(1, T0, "token.describe"), (2, T0 + D, "authentication")]


def test_read_events_reads_what_the_synthesiser_writes(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "events"
    synthesize(out, events=2_000, days=2, seed=1, start_ms=T0)

    events = read_events(spark, input_dir=out)

    assert events.columns == list(EVENT_COLUMNS)
    assert events.agg(F.count("id"), F.max("id")).first() == (2_000, 2_000)


def test_read_events_needs_exactly_one_existing_source(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalyticsError, match="does not exist"):
        read_events(spark, input_dir=tmp_path / "missing")
    with pytest.raises(AnalyticsError, match="exactly one"):
        read_events(spark)
    with pytest.raises(AnalyticsError, match="exactly one"):
        read_events(spark, input_dir=tmp_path, db_url="sqlite:///x.db")


# --- a whole run ---------------------------------------------------------------------------------------


def script(spark: SparkSession) -> DataFrame:
    """A day of activity: 4 tokens (2 for another owner), 3 renewals, 1 sweep, 1 lingering token, 2 refused
    requests and a burst of 6 failed logins."""
    return events_frame(
        spark,
        [
            create(1, T0, "a1", "User:alice", "User:alice", expiry=T0 + H, maximum=T0 + 2 * H),
            create(2, T0 + 1, "b1", "User:bob", "User:svc", requested=6 * H),
            create(3, T0 + 2, "b2", "User:bob", "User:svc"),
            create(4, T0 + 3, "c1", "User:carol", "User:carol", expiry=T0 + 3 * H),
            create(5, T0 + 4, None, "User:dave", "User:svc", outcome="denied"),
            renew(6, T0 + 10, "a1", "User:alice", T0 + 2 * H),
            renew(7, T0 + 11, "b1", "User:bob", T0 + 2 * D),
            renew(8, T0 + 12, "b1", "User:bob", T0 + 3 * D),
            sweep(9, T0 + 2 * H + 60_000, "a1", "User:alice", T0 + 2 * H),
            expire(10, T0 + 13, "b2", "User:bob", deleted=True, expiry=T0 + 13),
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
        ],
    )


def test_run_report_writes_every_table_and_a_self_contained_report(spark: SparkSession, tmp_path: Path) -> None:
    out = tmp_path / "report"

    summary = run_report(spark, script(spark), out, now_ms=T0 + 6 * H)

    assert summary == {
        "events": 18,
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

    # Left: the sweep of a1, the 6 failed logins; c1 expired at T0 + 3 h and lingers at until.
    assert (summary["events"], summary["tokens_issued"], summary["swept_tokens"]) == (7, 0, 1)
    assert (summary["authentication_failures"], summary["lingering_tokens"], summary["renewals"]) == (6, 1, 0)


def test_run_report_refuses_an_empty_window(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(AnalyticsError, match="since must be before until"):
        run_report(spark, script(spark), tmp_path, since_ms=T0, until_ms=T0)
