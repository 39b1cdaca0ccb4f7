"""The audit report job: the Spark session, reading the events, writing the figure tables and the report.

``run_report`` writes one Parquet table per figure under ``<out>/<table>/`` and ``<out>/report.html``.
The tables, with their columns (each built by the ``transforms`` function of the same idea):

- ``tokens_issued_by_owner_daily``: ``date, owner, tokens`` (tokens issued per UTC day and owner)
- ``tokens_issued_by_requester_daily``: ``date, token_requester, tokens``
- ``impersonation_matrix``: ``token_requester, owner, tokens, refused`` (creates for another owner:
  issued, and denied attempts)
- ``lifetime_distribution``: ``kind`` (requested|granted), ``bucket_order, bucket, lower_ms, upper_ms,
  tokens``
- ``token_renewals``: per token issued or renewed, ``token_id, owner, token_requester, created_at,
  renewals, last_renewed_at, issue_timestamp, max_timestamp, expiry_timestamp, headroom_ms,
  max_lifetime_used``
- ``renew_count_distribution``: ``renewals, tokens``
- ``max_lifetime_use``: ``bucket_order, bucket, tokens`` (renewed tokens by share of the max lifetime)
- ``expiry_compliance``: per token past its expiry, ``token_id, owner, token_requester,
  expiry_timestamp, removed_at, status`` (swept|expired|lingering), ``overdue_ms``
- ``overdue_distribution``: ``status, bucket_order, bucket, lower_ms, upper_ms, tokens``
- ``denials_by_principal``: ``kind`` (refusal|authentication), ``principal, client_address, denials,
  first_at, last_at``
- ``refusals_by_action``: ``kind, action, error_code, denials``
- ``denial_bursts``: ``principal, hour_start, hour, denials, baseline_mean, baseline_stddev, threshold,
  is_burst`` (the rule is in ``transforms``' docstring)
- ``top_owners``: ``rank, owner, tokens, impersonated, requesters, renewals``
- ``top_requesters``: ``rank, token_requester, tokens, for_others, owners, refused``

Counts cover events in ``[since, until)``; facts about a token that predate ``since`` come from the
history before ``until`` (see ``transforms``). The input is read twice: once to count the window, once
to keep the denied events and settled token changes, parsed and slimmed, in Spark's disk cache, from
which every table is built. Nothing reaches the driver but one-row spans and the report's small,
bounded aggregates (``report_data.collect``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from app.analytics import report, report_data, spark_internals, transforms
from app.analytics.events_schema import EVENT_COLUMNS, EVENT_SCHEMA, PARQUET_SCHEMA

JDBC_JARS = (Path("/usr/share/java/postgresql.jar"), Path("/usr/share/java/sqlite-jdbc.jar"))
"""Debian's ``libpostgresql-jdbc-java`` and ``libxerial-sqlite-jdbc-java``; added when installed."""

AUDIT_TABLE = "audit_events"
REPORT_FILE = "report.html"
Location = Path | str
"""A local directory, or a Hadoop file system URI such as ``hdfs://namenode/audit`` for cluster runs."""
_BOUNDS_QUERY = "(SELECT MIN(id) AS lo, MAX(id) AS hi, COUNT(*) AS n FROM audit_events) AS bounds"
LOCAL_SHUFFLE_PARTITIONS = 4
ROWS_PER_JDBC_PARTITION = 1_000_000

TABLES: tuple[str, ...] = (
    "tokens_issued_by_owner_daily",
    "tokens_issued_by_requester_daily",
    "impersonation_matrix",
    "lifetime_distribution",
    "token_renewals",
    "renew_count_distribution",
    "max_lifetime_use",
    "expiry_compliance",
    "overdue_distribution",
    "denials_by_principal",
    "refusals_by_action",
    "denial_bursts",
    "top_owners",
    "top_requesters",
)
"""Every table ``run_report`` writes, in report order."""

# Tables that are small whatever the input (bounded by buckets or top_n): one file each.
_SMALL_TABLES = frozenset(
    {
        "lifetime_distribution",
        "renew_count_distribution",
        "max_lifetime_use",
        "overdue_distribution",
        "refusals_by_action",
        "top_owners",
        "top_requesters",
    }
)


class AnalyticsError(Exception):
    """Bad input to the job (a URL it cannot read, a missing directory); the message is one line."""


def build_session(master: str | None = "local[2]", app_name: str = "kts-audit-report") -> SparkSession:
    """A session for the report. ``master`` None leaves it to ``spark-submit`` or ``spark-defaults.conf``.
    Local masters get few shuffle partitions, no web UI and error-only logs; Debian's JDBC jars join
    ``spark.jars``."""
    builder = SparkSession.builder.appName(app_name)
    builder = builder.config("spark.sql.session.timeZone", "UTC").config("spark.ui.showConsoleProgress", "false")
    jars = [str(jar) for jar in JDBC_JARS if jar.is_file()]
    quiet_logging: Path | None = None
    if master is None:
        # Under spark-submit the JVM is up and its conf may hold --jars, which spark.jars must keep.
        from pyspark import SparkConf

        jars = [jar for jar in SparkConf().get("spark.jars", "").split(",") if jar] + jars
    else:
        builder = builder.master(master)
        if master.startswith("local"):
            # A host name resolving to loopback makes Spark warn and guess an interface; local needs none.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            quiet_logging = _quiet_log4j2_file()
            builder = (
                builder.config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
                .config("spark.ui.enabled", "false")
                .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={quiet_logging.as_uri()}")
            )
    if jars:
        builder = builder.config("spark.jars", ",".join(dict.fromkeys(jars)))
    try:
        spark = builder.getOrCreate()
    finally:
        if quiet_logging is not None:
            quiet_logging.unlink(missing_ok=True)  # read once, when the JVM started
    spark.sparkContext.setLogLevel("ERROR")
    return spark


_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""
# PySpark counts as a shell: Spark announces a default level unless the repl logger's equals the root's.


def _quiet_log4j2_file() -> Path:
    """A log4j2 configuration for the local JVM: errors only, so a command's own output stays readable."""
    descriptor, name = tempfile.mkstemp(prefix="kts-log4j2-", suffix=".properties")
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(_QUIET_LOG4J2)
    return Path(name)


# --- reading -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JdbcSource:
    """A JDBC URL and its connection properties, from an ``audit.db.url``. ``repr`` hides the password."""

    url: str
    properties: dict[str, str] = field(repr=False)
    shown: str

    def __str__(self) -> str:
        return self.shown


def jdbc_source(db_url: str) -> JdbcSource:
    """``sqlite:///path`` or ``postgresql[+driver]://user:pw@host:port/db[?key=value]`` as JDBC."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(db_url)
    except ArgumentError:
        raise AnalyticsError("--db must be an SQLAlchemy URL such as sqlite:///audit.db") from None
    shown = url.render_as_string(hide_password=True)
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise AnalyticsError(f"{shown} names no SQLite database file")
        path = Path(url.database).expanduser().resolve()
        if not path.is_file():
            raise AnalyticsError(f"the SQLite database {path} does not exist")
        return JdbcSource(f"jdbc:sqlite:{path}", {"driver": "org.sqlite.JDBC"}, shown)
    if backend == "postgresql":
        if not url.database:
            raise AnalyticsError(f"{shown} names no database")
        host = url.host or "localhost"
        host = f"[{host}]" if ":" in host else host
        properties = {"driver": "org.postgresql.Driver"}
        properties |= {key: str(value) for key, value in url.query.items() if isinstance(value, str)}
        if url.username:
            properties["user"] = url.username
        if url.password is not None:
            properties["password"] = str(url.password)
        return JdbcSource(f"jdbc:postgresql://{host}:{url.port or 5432}/{url.database}", properties, shown)
    raise AnalyticsError(f"unsupported audit database {backend!r}: use sqlite:///... or postgresql://...")


def is_uri(location: Location) -> bool:
    """A Hadoop file system URI (``hdfs://``, ``s3a://``, ``file:/``) rather than a local path."""
    return isinstance(location, str) and ":/" in location


def _child(location: Location, name: str) -> str:
    return f"{str(location).rstrip('/')}/{name}" if is_uri(location) else str(Path(location) / name)


def read_events(spark: SparkSession, *, input_dir: Location | None = None, db_url: str | None = None) -> DataFrame:
    """The audit events in ``EVENT_SCHEMA``, from an exported Parquet directory (a local path or a Hadoop
    URI) or the audit database."""
    if (input_dir is None) == (db_url is None):
        raise AnalyticsError("give exactly one of an input directory and a database URL")
    if input_dir is not None:
        if not is_uri(input_dir) and not Path(input_dir).is_dir():
            raise AnalyticsError(f"the input directory {input_dir} does not exist")
        return spark.read.schema(PARQUET_SCHEMA).parquet(str(input_dir)).select(*EVENT_COLUMNS)
    assert db_url is not None
    return _read_jdbc(spark, jdbc_source(db_url))


def _read_jdbc(spark: SparkSession, source: JdbcSource) -> DataFrame:
    """The audit table, split by ``id`` ranges into parallel reads. Only its id bounds reach the driver."""
    bounds = spark.read.jdbc(
        source.url,
        _BOUNDS_QUERY,
        properties=source.properties,
    ).first()
    properties = {**source.properties, "fetchsize": "10000"}
    if bounds is None or bounds["n"] == 0:
        raw = spark.read.jdbc(source.url, AUDIT_TABLE, properties=properties)
    else:
        partitions = max(1, min(spark.sparkContext.defaultParallelism * 4, int(bounds["n"]) // ROWS_PER_JDBC_PARTITION))
        raw = spark.read.jdbc(
            source.url,
            AUDIT_TABLE,
            column="id",
            lowerBound=int(bounds["lo"]),
            upperBound=int(bounds["hi"]) + 1,
            numPartitions=partitions,
            properties=properties,
        )
    # Drivers map column types their own way (SQLite's INTEGER id is an int); settle on EVENT_SCHEMA.
    return raw.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in EVENT_SCHEMA.fields])


# --- the report ----------------------------------------------------------------------------------------


def base_tables(
    history: DataFrame,
    *,
    since_ms: int | None,
    now_ms: int,
    span_start_ms: int,
    span_end_ms: int,
    top_n: int,
) -> dict[str, DataFrame]:
    """The tables built from the events (``transforms.report_events`` of the history)."""
    window = transforms.in_window(history, since_ms=since_ms)
    creations = transforms.token_creations(window)
    denied = transforms.denials(window)
    return {
        "tokens_issued_by_owner_daily": transforms.issued_per_day(creations, "owner"),
        "tokens_issued_by_requester_daily": transforms.issued_per_day(creations, "token_requester"),
        "impersonation_matrix": transforms.impersonation_matrix(window),
        "lifetime_distribution": transforms.lifetime_distribution(creations),
        "token_renewals": transforms.token_renewals(history, since_ms=since_ms),
        "expiry_compliance": transforms.expiry_compliance(history, now_ms=now_ms, since_ms=since_ms),
        "denials_by_principal": transforms.denials_by_principal(denied),
        "refusals_by_action": transforms.refusals_by_action(denied),
        "denial_bursts": transforms.denial_bursts(denied, span_start_ms=span_start_ms, span_end_ms=span_end_ms),
        "top_owners": transforms.top_owners(window, top_n=top_n),
        "top_requesters": transforms.top_requesters(window, top_n=top_n),
    }


def derived_tables(base: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The distributions of per-token tables: built from those tables as written, not from the events
    again, so the joins behind ``token_renewals`` and ``expiry_compliance`` run once."""
    return {
        "renew_count_distribution": transforms.renew_count_distribution(base["token_renewals"]),
        "max_lifetime_use": transforms.max_lifetime_use(base["token_renewals"]),
        "overdue_distribution": transforms.overdue_distribution(base["expiry_compliance"]),
    }


def _write(tables: dict[str, DataFrame], out_dir: Location) -> None:
    for name, table in tables.items():
        (table.coalesce(1) if name in _SMALL_TABLES else table).write.mode("overwrite").parquet(_child(out_dir, name))


def _read(spark: SparkSession, names: Iterable[str], out_dir: Location) -> dict[str, DataFrame]:
    return {name: spark.read.parquet(_child(out_dir, name)) for name in names}


def run_report(
    spark: SparkSession,
    events: DataFrame,
    out_dir: Location,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    top_n: int = 20,
    now_ms: int | None = None,
) -> dict[str, Any]:
    """Writes every table of ``TABLES`` and ``report.html`` under ``out_dir``; returns the summary counts.
    ``now_ms`` (default: ``until_ms``, else the wall clock) is when lingering tokens are judged."""
    if top_n < 1:
        raise AnalyticsError("top_n must be at least 1")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise AnalyticsError("since must be before until")
    if now_ms is None:
        now_ms = until_ms if until_ms is not None else int(time.time() * 1000)
    history = transforms.in_window(events.select(*EVENT_COLUMNS), until_ms=until_ms)
    window = transforms.in_window(history, since_ms=since_ms)
    span = window.agg(
        F.count(F.lit(1)).alias("events"), F.min("timestamp").alias("first"), F.max("timestamp").alias("last")
    ).first()
    assert span is not None
    event_count = int(span["events"])
    span_start = since_ms if since_ms is not None else (span["first"] if span["first"] is not None else now_ms)
    span_end = until_ms if until_ms is not None else (span["last"] + 1 if span["last"] is not None else now_ms)

    # On disk, not in the heap: the report must run in a small driver, and the cache is read once per table,
    # sequentially, which local disks serve well.
    relevant = transforms.report_events(history).persist(StorageLevel.DISK_ONLY)
    try:
        base = base_tables(
            relevant, since_ms=since_ms, now_ms=now_ms, span_start_ms=span_start, span_end_ms=span_end, top_n=top_n
        )
        _write(base, out_dir)
    finally:
        relevant.unpersist()
    _write(derived_tables(_read(spark, base, out_dir)), out_dir)

    written = _read(spark, TABLES, out_dir)
    data = report_data.collect(
        written,
        top_n=top_n,
        events=event_count,
        span_start_ms=span_start,
        span_end_ms=span_end,
        now_ms=now_ms,
    )
    _write_text(spark, _child(out_dir, REPORT_FILE), report.render_html(data))
    return data.summary


def _write_text(spark: SparkSession, target: str, text: str) -> None:
    """A local file directly; a URI through the JVM's Hadoop file system, which knows hdfs://, s3a://..."""
    if not is_uri(target):
        Path(target).write_text(text, encoding="utf-8")
        return
    spark_internals.write_text(spark, target, text)
