"""``kts audit-export``: append the audit events not yet exported to a date-partitioned Parquet directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.backends import load_settings
from app.cli.analytics_extra import missing_extra
from app.domain.clock import SystemClock
from app.domain.errors import StoreUnavailable
from app.settings import ConfigError

if TYPE_CHECKING:
    from app.analytics.export import ExportResult

# The exporter reads only the audit database: it never talks to ZooKeeper and must not need the secret
# key, so the settings that ``kts serve`` requires get stand-ins and only audit.db.url is taken from the
# file and the environment, by the same loader and with the same precedence as the service.
_NOT_USED_BY_THE_EXPORT = {"zookeeper_connect": "127.0.0.1:2181", "delegation_token_secret_key": "not-used"}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "audit-export",
        help="export the audit events as date-partitioned Parquet (incremental)",
        description=(
            "Append the settled audit events not yet exported to DIR as Parquet files partitioned by UTC day "
            "(DIR/date=YYYY-MM-DD/). DIR keeps the last exported id, so each run adds only new events. "
            "Pending events, and events newer than the settle window, wait for a later run."
        ),
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the export directory")
    parser.add_argument(
        "--db", metavar="URL", help="audit database URL (default: audit.db.url from --config or KTS_AUDIT_DB_URL)"
    )
    parser.add_argument("--config", type=Path, metavar="FILE", help="properties file of kts serve, for audit.db.url")
    parser.add_argument(
        "--settle-seconds",
        type=float,
        metavar="S",
        help="leave events younger than this for the next run (default: one minute, the audit reconciler's grace)",
    )
    parser.set_defaults(handler=run, usage=parser)


def audit_db_url(config_file: Path | None, given: str | None = None) -> str:
    """``given``, else ``audit.db.url`` from the environment or the file (default ``sqlite:///./kts-audit.db``);
    validated as the service validates it. Raises ConfigError."""
    overrides = dict(_NOT_USED_BY_THE_EXPORT)
    if given is not None:
        overrides["audit_db_url"] = given
    return load_settings(config_file, **overrides).audit_db_url


def run(args: argparse.Namespace) -> int:
    try:
        from app.analytics import export
    except ImportError as error:
        return missing_extra("audit-export", error)
    if args.settle_seconds is not None and args.settle_seconds < 0:
        args.usage.error("--settle-seconds must not be negative")
    if args.out.exists() and not args.out.is_dir():
        args.usage.error(f"--out: {args.out} is not a directory")
    try:
        url = audit_db_url(args.config, args.db)
    except ConfigError as exc:
        print(f"kts: configuration error: {exc}", file=sys.stderr)
        return 2
    settle_ms = export.SETTLE_MS if args.settle_seconds is None else round(args.settle_seconds * 1000)
    try:
        result = _export(url, args.out, settle_ms=settle_ms)
    except (export.ExportError, OSError) as exc:
        print(f"kts: {exc}", file=sys.stderr)
        return 1
    print(summary(result))
    return 0


def _export(url: str, out_dir: Path, *, settle_ms: int) -> ExportResult:
    # Imported here, not at registration: ``kts --help`` must not load SQLAlchemy.
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    from app.analytics.export import ExportError, export_events
    from app.storage.audit.database import describe_url, make_engine, translated_db_errors
    from app.storage.audit.tables import audit_events

    where = describe_url(url)  # never the password
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if not Path(parsed.database).is_file():  # SQLite would create an empty database: a typo, not an export
            raise ExportError(f"audit.db.url: no SQLite database at {parsed.database}")
    engine = make_engine(url)
    try:
        try:
            with translated_db_errors(), engine.connect() as connection:
                has_table = inspect(connection).has_table(audit_events.name)
        except StoreUnavailable:
            raise ExportError(f"audit.db.url: cannot reach {where}") from None
        if not has_table:
            raise ExportError(f"audit.db.url: {where} has no {audit_events.name} table (has kts serve run on it?)")
        try:
            return export_events(engine, out_dir, now_ms=SystemClock().now_ms(), settle_ms=settle_ms)
        except StoreUnavailable as exc:
            raise ExportError(f"audit.db.url: {exc.message}") from None
    finally:
        engine.dispose()


def summary(result: ExportResult) -> str:
    """One line for the log of a scheduled job."""
    if result.exported:
        days = len(result.dates)
        line = (
            f"exported {result.exported} event{'s' if result.exported != 1 else ''} "
            f"(ids {result.first_id}..{result.last_id}) "
            f"into {days} date partition{'s' if days != 1 else ''}"
        )
    else:
        line = "no new events to export"
    line += f"; {result.state.exported_events} in total, last exported id {result.state.last_id}"
    if result.held_back:
        line += f"; {result.held_back} newer held back (pending or within the settle window)"
    return line
