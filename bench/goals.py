"""The goals of issue 38, each a ratio of a figure to its ceiling (the raw work a perfect kts could not avoid,
measured in the same run), and their table. Pure: reads the suite's report, does no I/O.

Each goal names where its figure and its ceiling are in the report (key paths); the ratio is figure / ceiling,
checked against a bound. RSS is the one goal without a ceiling (memory is not a time): its bound applies to the
figure itself. A goal may print another ceiling beside its own, unchecked (KRaft verify: the GET no-op beside the
POST no-op of the same body; describe: the static page from the event loop beside the one from a request
thread). A goal whose figure or ceiling the run did not measure (a part left out with --parts) is printed as
not measured (``met`` None), never as met.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Path = tuple[str, ...]


@dataclass(frozen=True)
class Goal:
    name: str
    figure: Path  # where the figure is in the report
    ceiling: Path | None  # where its ceiling is (None: the bound applies to the figure itself)
    compare: str  # ">=", "<=" or "<"
    bound: float
    describe: str
    # A further condition on the report for the goal to count as met (the sweep must have left nothing).
    complete: Callable[[dict[str, Any]], bool] | None = None
    # Another ceiling printed beside the goal's, not checked: (what it is, where it is in the report).
    beside: tuple[str, Path] | None = None


def _sweep_complete(report: dict[str, Any]) -> bool:
    sweep = report.get("sweep") or {}
    return sweep.get("left") == 0 and sweep.get("audit_events", 0) >= sweep.get("tokens", math.inf)


GOALS: tuple[Goal, ...] = (
    Goal(
        "create_vs_noop",
        ("create", "http", "per_s"),
        ("create", "noop_ceiling", "per_s"),
        ">=",
        0.6,
        "token creates/s over a no-op request's /s (GET /healthz), same server, client and concurrency",
    ),
    Goal(
        "describe_p99_vs_noop_p99",
        ("describe", "owner_filtered", "p99_ms"),
        ("describe", "static_page_ceiling", "p99_ms"),
        "<=",
        1.5,
        "p99 of describe by owner (100 tokens, 100k in ZooKeeper) over a no-op request's p99 answering the "
        "same 100-token page as static bytes, from a thread of the request pool as kts's endpoints",
        beside=("the page from the event loop", ("describe", "static_page_on_loop", "p99_ms")),
    ),
    Goal(
        "convergence_p99_vs_raw_chain_p99",
        ("convergence", "p99_ms"),
        ("convergence", "raw_chain_ceiling", "p99_ms"),
        "<=",
        2.0,
        "create on replica A to visible on replica B, over plain kazoo's chain (watch fires, list, read the "
        "notification, read the token)",
    ),
    Goal(
        "startup_vs_raw_load",
        ("startup", "seconds"),
        ("startup", "raw_load_ceiling", "seconds"),
        "<=",
        1.5,
        "start-up with the tokens in ZooKeeper over plain kazoo's getChildren, pipelined reads and json decode",
    ),
    Goal(
        "sweep_vs_raw_sweep",
        ("sweep", "sweep_seconds"),
        ("sweep", "raw_sweep_ceiling", "seconds"),
        "<=",
        2.0,
        "the audited sweep (first deletion to every expiry settled) over plain kazoo transactions of the same "
        "batch size and the audit rows inserted one SQLite transaction per batch",
        complete=_sweep_complete,
    ),
    Goal(
        "audit_report_vs_scan",
        ("audit_report", "report_seconds"),
        ("audit_report", "ceiling_seconds"),
        "<=",
        2.0,
        "the audit report over one Spark scan and group-by of the same Parquet (10M events), each timed on a "
        "fresh Spark JVM of its own",
    ),
    Goal("rss_mb", ("memory", "rss_mb"), None, "<", 150.0, "resident memory (MB) with the tokens loaded"),
    Goal(
        "kraft_create_vs_raw_rpc",
        ("kraft", "create", "http", "per_s"),
        ("kraft", "create", "rpc_ceiling", "per_s"),
        ">=",
        0.95,
        "KRaft backend: creates/s over CreateDelegationToken RPCs/s sent straight to the broker",
    ),
    Goal(
        "kraft_verify_vs_noop",
        ("kraft", "verify", "verify", "per_s"),
        ("kraft", "verify", "noop_post_ceiling", "per_s"),
        ">=",
        0.9,
        "KRaft backend: verifies/s over a no-op POST's /s (POST /bench/noop: the verify's JSON body and headers, "
        "received and parsed, a fixed answer), same server, client and concurrency; GET /healthz's printed beside",
        beside=("GET /healthz", ("kraft", "verify", "noop_ceiling", "per_s")),
    ),
)

_COMPARE: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, "<": operator.lt}


def lookup(report: dict[str, Any], path: Path) -> Any:
    value: Any = report
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def evaluate(report: dict[str, Any], goals: tuple[Goal, ...] = GOALS) -> dict[str, dict[str, Any]]:
    """Each goal with its figure, ceiling, ratio and whether it is met (None: not measured)."""
    results: dict[str, dict[str, Any]] = {}
    for goal in goals:
        figure = _number(lookup(report, goal.figure))
        ceiling = None if goal.ceiling is None else _number(lookup(report, goal.ceiling))
        if goal.ceiling is None:
            ratio = None
            checked = figure
        else:
            ratio = None if figure is None or not ceiling else round(figure / ceiling, 3)
            checked = ratio
        met = None
        if checked is not None:
            met = _COMPARE[goal.compare](checked, goal.bound) and (goal.complete is None or goal.complete(report))
        results[goal.name] = {
            "goal": f"{'ratio' if goal.ceiling else 'figure'} {goal.compare} {goal.bound:g}",
            "figure": figure,
            "ceiling": ceiling,
            "ratio": ratio,
            "met": met,
            "what": goal.describe,
        }
        if goal.beside is not None:
            what, path = goal.beside
            other = _number(lookup(report, path))
            results[goal.name]["beside"] = {
                "ceiling": what,
                "figure": other,
                "ratio": None if figure is None or not other else round(figure / other, 3),
            }
    return results


def table(results: dict[str, dict[str, Any]]) -> str:
    """The goals as a fixed-width text table, one line each."""
    rows = [("goal", "figure", "ceiling", "ratio", "bound", "met")]
    for name, result in results.items():
        rows.append(
            (
                name,
                _cell(result["figure"]),
                _cell(result["ceiling"]),
                _cell(result["ratio"]),
                result["goal"].split(" ", 1)[1],
                {True: "yes", False: "NO", None: "not measured"}[result["met"]],
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    for name, result in results.items():  # the ceilings printed beside, one line each under the table
        beside = result.get("beside")
        if beside is not None:
            lines.append(
                f"{name}: against {beside['ceiling']} {_cell(beside['figure'])}, ratio {_cell(beside['ratio'])}"
            )
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
