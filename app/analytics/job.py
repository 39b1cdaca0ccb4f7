"""The audit report job: two passes over the events, the figure tables, and the report.

``run_report`` writes one Parquet table per figure under ``<out>/<table>/`` and ``<out>/report.html``.
The tables, with their columns (each built by the ``transforms`` function of the same name):

- ``token_lifecycle``: one row per token with a settled change in the history (``transforms.token_lifecycle``)
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
- ``tokens_by_job``: ``job_framework, job_id, job_name, job_user, tokens, first_at, last_at`` (tokens issued
  per job their create named: which job holds which tokens)

Counts cover events in ``[since, until)``; facts about a token that predate ``since`` come from the
history before ``until``. The report is a function of its input and ``as_of`` (when lingering tokens are
judged; default: the newest event of the history), never of the clock.

How it runs: the first pass (``transforms.overview``) is small and kept in memory for the denial tables;
the second (``transforms.token_lifecycle``) is written as ``token_lifecycle``, while the denial tables are
written beside it, and every token table is read from that file. Tables derived from other tables read them
as written, with the schema of the frame that wrote them (a Parquet read without one costs a Spark job to
find it). Nothing reaches the driver but one-row spans and the report's bounded aggregates, all in one query
(``report_data.collect``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from app.analytics import report, report_data, spark_internals, transforms
from app.analytics.events_schema import EVENT_COLUMNS
from app.analytics.progress import Progress, no_progress
from app.analytics.session import size_shuffles
from app.analytics.side_by_side import side_by_side
from app.analytics.sources import AnalyticsError, Location, child, is_uri

REPORT_FILE = "report.html"
ROWS_PER_SHUFFLE_PARTITION = 1_000_000

TABLES: tuple[str, ...] = (
    "token_lifecycle",
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
    "tokens_by_job",
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


# The per-token tables' columns whose values are all but distinct: token ids and times. For each such column
# Parquet's writer fills a dictionary until it overflows and then writes the values plain all the same (the
# files come out the same size); written plain from the start, they skip filling a dictionary they then drop.
_DISTINCT_COLUMNS = (
    "token_id",
    "created_at",
    "issue_timestamp",
    "max_timestamp",
    "issued_expiry_timestamp",
    "last_renewed_at",
    "renewed_expiry_timestamp",
    "last_expiry_timestamp",
    "removed_at",
    "removal_expiry_timestamp",
    "expiry_timestamp",
    "headroom_ms",
    "max_lifetime_used",
    "overdue_ms",
)


@dataclass(frozen=True, slots=True)
class Period:
    """What the report covers: the window's bounds as given, the span its events touch, when it judges."""

    since_ms: int | None
    until_ms: int | None
    as_of_ms: int
    span_start_ms: int
    span_end_ms: int
    events: int  # in the window
    history_events: int  # before until
    denied_events: int  # in the window


def period(span: Any, *, since_ms: int | None, until_ms: int | None, as_of_ms: int | None) -> Period:
    """The period from ``transforms.span``'s row; ``as_of`` defaults to the newest event of the history."""
    as_of = as_of_ms
    if as_of is None:
        as_of = span["newest_at"] if span["newest_at"] is not None else until_ms or since_ms or 0
    first, last = span["first_at"], span["last_at"]
    return Period(
        since_ms=since_ms,
        until_ms=until_ms,
        as_of_ms=as_of,
        span_start_ms=since_ms if since_ms is not None else (first if first is not None else as_of),
        span_end_ms=until_ms if until_ms is not None else (last + 1 if last is not None else as_of),
        events=int(span["events"]),
        history_events=int(span["history_events"]),
        denied_events=int(span["denied_events"]),
    )


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _write_plain(spark: SparkSession, columns: tuple[str, ...]) -> None:
    """Parquet columns of these names written without a dictionary, unless configured otherwise (the session's
    settings reach the Parquet writer through its Hadoop configuration)."""
    for column in columns:
        key = f"parquet.enable.dictionary#{column}"
        if spark.conf.get(key, None) is None:
            spark.conf.set(key, "false")


def run_report(
    spark: SparkSession,
    events: DataFrame,
    out_dir: Location,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    as_of_ms: int | None = None,
    top_n: int = 20,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Writes every table of ``TABLES`` and ``report.html`` under ``out_dir``; returns the summary counts."""
    if top_n < 1:
        raise AnalyticsError("top_n must be at least 1")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise AnalyticsError("since must be before until")
    history = transforms.in_window(events.select(*EVENT_COLUMNS), until_ms=until_ms)
    _write_plain(spark, _DISTINCT_COLUMNS)

    # Small (a row per distinct denial key, a few per core), read by five tables: kept, in memory while it fits.
    size_shuffles(spark, 0, rows_per_partition=ROWS_PER_SHUFFLE_PARTITION)  # one per core
    overview = transforms.overview(history, since_ms=since_ms).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        span = transforms.span(overview).first()
        assert span is not None
        covered = period(span, since_ms=since_ms, until_ms=until_ms, as_of_ms=as_of_ms)
        progress(
            f"read {covered.events:,} events in the window"
            + (f" ({covered.history_events:,} before --until)" if covered.history_events != covered.events else "")
            + f", {covered.denied_events:,} of them denied; tokens judged as of {_time(covered.as_of_ms)}"
        )
        partitions = size_shuffles(spark, covered.history_events, rows_per_partition=ROWS_PER_SHUFFLE_PARTITION)

        denied = transforms.denials(overview)
        # The denial tables need only the overview: written beside the lifecycle's long job, whose stages leave a
        # core idle at times (a stage's last tasks, the driver planning the next), they use that time.
        written = {"token_lifecycle": transforms.token_lifecycle(history, since_ms=since_ms)}
        written |= _denial_tables(denied, covered)
        _write(written, out_dir, progress)
        lifecycle = _read(spark, {"token_lifecycle": written["token_lifecycle"]}, out_dir)["token_lifecycle"]
        progress(f"token_lifecycle: {lifecycle.count():,} tokens ({partitions} shuffle partitions)")

        tables = _token_tables(lifecycle, denied, covered, top_n=top_n)
        _write(tables, out_dir, progress)
        written |= tables
    finally:
        overview.unpersist()
    # Reading two narrow columns of a per-token table costs less than building it again from the lifecycle.
    derived = _derived_tables(_read(spark, {name: written[name] for name in _SUMMARISED}, out_dir))
    _write(derived, out_dir, progress)
    written |= derived

    data = report_data.collect(
        _read(spark, {name: written[name] for name in TABLES}, out_dir),
        top_n=top_n,
        events=covered.events,
        span_start_ms=covered.span_start_ms,
        span_end_ms=covered.span_end_ms,
        as_of_ms=covered.as_of_ms,
    )
    page = report.render_html(data)
    _write_text(spark, child(out_dir, REPORT_FILE), page)
    progress(f"{REPORT_FILE}: {page.count('<img')} charts, {len(page.encode()) // 1024:,} KiB")
    return data.summary


def _denial_tables(denied: DataFrame, covered: Period) -> dict[str, DataFrame]:
    """The tables built from the denied events alone."""
    return {
        "denials_by_principal": transforms.denials_by_principal(denied),
        "refusals_by_action": transforms.refusals_by_action(denied),
        "denial_bursts": transforms.denial_bursts(
            denied, span_start_ms=covered.span_start_ms, span_end_ms=covered.span_end_ms
        ),
    }


def _token_tables(lifecycle: DataFrame, denied: DataFrame, covered: Period, *, top_n: int) -> dict[str, DataFrame]:
    """The tables built from the token lifecycles (and, for creates refused, the denied events)."""
    issued = transforms.issued(lifecycle, since_ms=covered.since_ms)
    return {
        "tokens_issued_by_owner_daily": transforms.issued_per_day(issued, "owner"),
        "tokens_issued_by_requester_daily": transforms.issued_per_day(issued, "token_requester"),
        "impersonation_matrix": transforms.impersonation_matrix(issued, denied),
        "lifetime_distribution": transforms.lifetime_distribution(issued),
        "token_renewals": transforms.token_renewals(lifecycle, since_ms=covered.since_ms),
        "expiry_compliance": transforms.expiry_compliance(
            lifecycle, as_of_ms=covered.as_of_ms, since_ms=covered.since_ms
        ),
        "top_owners": transforms.top_owners(lifecycle, since_ms=covered.since_ms, top_n=top_n),
        "top_requesters": transforms.top_requesters(issued, denied, top_n=top_n),
        "tokens_by_job": transforms.tokens_by_job(issued),
    }


_SUMMARISED = ("token_renewals", "expiry_compliance")


def _derived_tables(written: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The distributions of per-token tables, built from those tables as written."""
    return {
        "renew_count_distribution": transforms.renew_count_distribution(written["token_renewals"]),
        "max_lifetime_use": transforms.max_lifetime_use(written["token_renewals"]),
        "overdue_distribution": transforms.overdue_distribution(written["expiry_compliance"]),
    }


def _write(tables: dict[str, DataFrame], out_dir: Location, progress: Progress = no_progress) -> None:
    def writer(name: str) -> Callable[[], None]:
        table = tables[name].coalesce(1) if name in _SMALL_TABLES else tables[name]
        return lambda: table.write.mode("overwrite").parquet(child(out_dir, name))

    side_by_side({name: writer(name) for name in tables}, on_done=lambda name: progress(f"wrote {name}"))


def _read(spark: SparkSession, tables: dict[str, DataFrame], out_dir: Location) -> dict[str, DataFrame]:
    """The ``tables`` as written, each read with the schema of the frame that wrote it: a Parquet read
    without a schema runs a Spark job to find it in the files' footers."""
    return {
        name: spark.read.schema(_nullable(frame.schema)).parquet(child(out_dir, name)) for name, frame in tables.items()
    }


def _nullable(schema: StructType) -> StructType:
    """``schema`` with every column nullable, as a Parquet table reads back."""
    return StructType([StructField(column.name, column.dataType, True, column.metadata) for column in schema])


def _write_text(spark: SparkSession, target: str, text: str) -> None:
    """A local file directly; a URI through the JVM's Hadoop file system, which knows hdfs://, s3a://..."""
    if not is_uri(target):
        Path(target).write_text(text, encoding="utf-8")
        return
    spark_internals.write_text(spark, target, text)
