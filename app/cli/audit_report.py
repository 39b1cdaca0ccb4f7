"""``kts audit-report``: run the Spark audit report over exported Parquet or the audit database.

Locally it runs on ``--master`` (default ``local[2]``). Under ``spark-submit`` (the JVM started Python)
the master comes from ``spark-submit`` unless ``--master`` is given, so the same command runs unchanged on
a cluster::

    spark-submit --master yarn app/cli/audit_report.py --input hdfs:///audit --out hdfs:///reports/w42

Progress goes to stderr as phase lines (spark-submit merges it into its stdout); the JVM's own output goes
to a log file unless ``--verbose`` (under spark-submit it is spark-submit's).
The summary goes to stdout. Exit codes: 0 written, 1 failed (one line on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.analytics_extra import missing_extra

if TYPE_CHECKING:
    from app.analytics.session import JvmLog

LOCAL_MASTER = "local[2]"


def instant_ms(text: str) -> int:
    """``--since``/``--until``/``--as-of``: ms since the epoch, or an ISO 8601 date or time (UTC unless it
    says)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither ms since the epoch nor an ISO date/time such as 2024-05-01 or 2024-05-01T12:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _location(text: str) -> Path | str:
    """A local path, or a Hadoop URI kept as text (``Path`` would fold ``hdfs://`` into ``hdfs:/``)."""
    return text if ":/" in text else Path(text)


def _configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input", type=_location, metavar="DIR", help="Parquet written by kts audit-export (a path or Hadoop URI)"
    )
    source.add_argument(
        "--db", metavar="URL", help="the audit database (audit.db.url): sqlite:///... or postgresql://..."
    )
    parser.add_argument(
        "--out", type=_location, required=True, metavar="DIR", help="where tables and report.html go (path or URI)"
    )
    parser.add_argument("--since", type=instant_ms, metavar="TIME", help="first instant (inclusive)")
    parser.add_argument(
        "--until", type=instant_ms, metavar="TIME", help="end instant (exclusive); default: after the last event"
    )
    parser.add_argument(
        "--as-of",
        type=instant_ms,
        metavar="TIME",
        help="when tokens past their expiry are judged still present; default: the newest event before --until",
    )
    parser.add_argument(
        "--master", help=f"Spark master; default {LOCAL_MASTER}, or spark-submit's when run under spark-submit"
    )
    parser.add_argument("--top", type=_positive, default=20, metavar="N", help="rows in top-N tables (default 20)")
    parser.add_argument(
        "--verbose", action="store_true", help="show Spark's and matplotlib's own warnings instead of a log file"
    )


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "audit-report",
        help="audit analytics on Spark: Parquet tables and a self-contained report.html",
        description="Turn the audit trail into Parquet figure tables and one self-contained report.html, on Spark.",
    )
    _configure(parser)
    parser.set_defaults(handler=run)


def _master(requested: str | None) -> str | None:
    from app.analytics.spark_internals import launched_by_spark_submit

    if requested:
        return requested
    return None if launched_by_spark_submit() else LOCAL_MASTER


def _one_line(error: BaseException, secret: str | None) -> str:
    """The error's first line, plus the innermost Java cause (Spark's own message hides the JDBC driver's
    reason, such as a missing database); the password, if any, is masked wherever it appears."""
    from app.analytics.spark_internals import java_root_cause

    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    cause = java_root_cause(error)
    if cause and cause not in text:
        text = f"{text}: {cause}"
    return text.replace(secret, "***") if secret else text


def _quiet_libraries() -> None:
    """Keep py4j's and matplotlib's own log lines and warnings (fonts, cache directories) off the terminal."""
    for name in ("py4j", "matplotlib", "pyspark"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"(matplotlib|pyspark)\b")


def _discard(jvm_log: JvmLog | None) -> None:
    if jvm_log is not None:
        jvm_log.discard()


def run(args: argparse.Namespace) -> int:
    if args.since is not None and args.until is not None and args.since >= args.until:
        print("kts: --since must be before --until", file=sys.stderr)
        return 2
    try:
        from app.analytics.job import run_report
        from app.analytics.progress import PhaseLines
        from app.analytics.session import JvmLog, build_session
        from app.analytics.sources import AnalyticsError, jdbc_source, read_events
    except ImportError as error:
        return missing_extra("audit-report", error)

    if not args.verbose:
        _quiet_libraries()
    progress = PhaseLines()
    password: str | None = None
    jvm_log = None if args.verbose else JvmLog()
    try:
        if args.db is not None:
            password = jdbc_source(args.db).properties.get("password")
        elif isinstance(args.input, Path) and not args.input.is_dir():
            raise AnalyticsError(f"the input directory {args.input} does not exist")
        spark = build_session(_master(args.master), jvm_log=jvm_log)
        progress(f"Spark {spark.version} ready on {spark.sparkContext.master}")
        try:
            summary = run_report(
                spark,
                read_events(spark, input_dir=args.input, db_url=args.db),
                args.out,
                since_ms=args.since,
                until_ms=args.until,
                as_of_ms=args.as_of,
                top_n=args.top,
                progress=progress,
            )
        finally:
            spark.stop()
    except AnalyticsError as exc:
        _discard(jvm_log)
        print(f"kts: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # Spark, JDBC and Java errors arrive as many types; report them in one line
        kept = jvm_log is not None and jvm_log.path.is_file() and jvm_log.path.stat().st_size > 0
        where = f" (Spark's log: {jvm_log.path})" if kept and jvm_log is not None else ""
        if not kept:
            _discard(jvm_log)
        print(f"kts: audit report failed: {_one_line(exc, password)}{where}", file=sys.stderr)
        return 1
    _discard(jvm_log)
    print(f"wrote {str(args.out).rstrip('/')}/report.html")
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``spark-submit app/cli/audit_report.py ...``."""
    parser = argparse.ArgumentParser(prog="kts audit-report", description=__doc__.splitlines()[0])
    _configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
