"""Where the events come from: database URLs as JDBC, and reading the exported layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from app.analytics.events_schema import EVENT_COLUMNS, EVENT_SCHEMA, partition_date_column
from app.analytics.sources import AnalyticsError, jdbc_source, read_events
from app.domain.audit import JOB_COLUMNS
from bench.audit_synth import synthesize
from tests.unit.analytics.events import event, events_frame, rows

D = 86_400_000
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


def test_an_export_from_before_the_job_columns_reads_with_them_null(spark: SparkSession, tmp_path: Path) -> None:
    """Files exported before kts kept jobs (alembic 0003) have no job columns: they read back, the jobs null."""
    job = ("spark", "app-1", "etl", "joe")
    old = events_frame(spark, [event(1, T0, "token.describe")]).drop(*JOB_COLUMNS)
    new = events_frame(spark, [event(2, T0 + D, "token.create", **dict(zip(JOB_COLUMNS, job, strict=True)))])
    for name, frame in (("old", old), ("new", new)):
        frame.withColumn("date", partition_date_column()).write.partitionBy("date").parquet(str(tmp_path / name))
    (tmp_path / "new" / "date=2023-11-15").rename(tmp_path / "old" / "date=2023-11-15")  # one trail, two ages

    found = read_events(spark, input_dir=tmp_path / "old")

    assert found.columns == list(EVENT_COLUMNS)
    assert rows(found, "id", *JOB_COLUMNS) == [(1, None, None, None, None), (2, *job)]


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
