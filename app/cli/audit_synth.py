"""``kts audit-synth``: write realistic synthetic audit events in the exported Parquet layout (scale tests)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from app.analytics.event_files import MS_PER_DAY
from app.analytics.synth import SynthError, SynthResult, synthesize


def _positive(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return value


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date such as 2026-01-05") from None


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "audit-synth",
        help="write synthetic audit events as date-partitioned Parquet (for scale tests)",
        description=(
            "Write N realistic synthetic audit events into DIR in the layout kts audit-export writes: "
            "heavy-tailed owners, services impersonating users, renewals, sweeps, refusals and bursts of "
            "failed logins. The same arguments always give the same events."
        ),
    )
    parser.add_argument("--events", type=_positive, required=True, metavar="N", help="how many events")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="an empty or new directory")
    parser.add_argument("--seed", type=_seed, default=0, metavar="S", help="random seed (default 0)")
    parser.add_argument("--days", type=_positive, default=30, metavar="D", help="about how many days (default 30)")
    parser.add_argument("--start", type=_day, metavar="YYYY-MM-DD", help="first UTC day (default: D days before today)")
    parser.set_defaults(handler=run, usage=parser)


def run(args: argparse.Namespace) -> int:
    if args.out.exists() and not args.out.is_dir():
        args.usage.error(f"--out: {args.out} is not a directory")
    first_day = args.start or datetime.now(UTC).date() - timedelta(days=args.days)
    start_ms = (first_day - date(1970, 1, 1)).days * MS_PER_DAY
    try:
        result = synthesize(args.out, events=args.events, days=args.days, seed=args.seed, start_ms=start_ms)
    except (SynthError, OSError) as exc:
        print(f"kts: {exc}", file=sys.stderr)
        return 1
    print(summary(result))
    return 0


def summary(result: SynthResult) -> str:
    first = datetime.fromtimestamp(result.first_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    last = datetime.fromtimestamp(result.last_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    return (
        f"wrote {result.events} events ({result.tokens} tokens created) in {result.days} date partitions, "
        f"{first} to {last} UTC"
    )
