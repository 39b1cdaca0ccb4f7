"""The report's numbers: small aggregates of the figure tables, collected to the driver as plain values.

``collect`` is the only place rows reach the driver, and every query in it is bounded: by the bucket
lists, by ``top_n``, by the distinct renewal counts, or by days x (``top_n`` + 1) for the daily charts.

Each Spark query costs the driver its planning and code generation, whatever its size, so the report
asks few: the tables that are small whatever the input are read in one query, and each daily chart
finds its leaders and sums the rest in one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, Row, Window
from pyspark.sql import functions as F

from app.analytics.charts import NONE, OTHERS
from app.analytics.side_by_side import side_by_side
from app.domain.audit import JOB_COLUMNS

MAX_DAYS_CHARTED = 366
MAX_RENEW_COUNTS = 50


@dataclass
class ReportData:
    """Everything the page shows, as plain Python values."""

    summary: dict[str, Any]
    span_start_ms: int
    span_end_ms: int
    as_of_ms: int  # when lingering tokens were judged
    top_n: int
    issued_by_owner: list[tuple[str, str, int]] = field(default_factory=list)  # date, owner, tokens
    issued_by_requester: list[tuple[str, str, int]] = field(default_factory=list)
    impersonation: list[tuple[str, str, int, int]] = field(default_factory=list)  # requester, owner, tokens, refused
    impersonation_pairs: list[tuple[str, str, int, int]] = field(default_factory=list)  # the top pairs
    lifetimes: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> bucket -> tokens
    renew_counts: list[tuple[int, int]] = field(default_factory=list)  # renewals, tokens
    max_lifetime_use: dict[str, int] = field(default_factory=dict)
    overdue: dict[str, dict[str, int]] = field(default_factory=dict)  # status -> bucket -> tokens
    most_overdue: list[dict[str, Any]] = field(default_factory=list)
    denials_by_principal: list[tuple[str, int, int]] = field(default_factory=list)  # principal, refusals, auth
    denials_by_address: list[tuple[str, int, int]] = field(default_factory=list)
    refusals_by_action: list[dict[str, Any]] = field(default_factory=list)
    bursts: list[dict[str, Any]] = field(default_factory=list)
    top_owners: list[dict[str, Any]] = field(default_factory=list)
    top_requesters: list[dict[str, Any]] = field(default_factory=list)
    top_jobs: list[dict[str, Any]] = field(default_factory=list)  # the jobs with the most tokens issued


# --- collecting ----------------------------------------------------------------------------------------


SMALL_TABLES = (
    "overdue_distribution",
    "refusals_by_action",
    "lifetime_distribution",
    "renew_count_distribution",
    "max_lifetime_use",
    "top_owners",
    "top_requesters",
)
"""The tables bounded whatever the input (by buckets, kinds of refusal, renewal counts or ``top_n``)."""


def _rows(frame: DataFrame) -> list[Row]:
    return frame.collect()


def _small_tables(tables: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Every row of the ``SMALL_TABLES``, in one query: each row as JSON text tagged with its table (nulls
    kept), so that tables of different columns share one result. Rows keep their order in each table."""
    tagged = [
        tables[name].select(
            F.lit(name).alias("table"),
            F.to_json(F.struct(*tables[name].columns), {"ignoreNullFields": "false"}).alias("row"),
        )
        for name in SMALL_TABLES
    ]
    union = tagged[0]
    for other in tagged[1:]:
        union = union.unionAll(other)
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in SMALL_TABLES}
    for row in _rows(union):
        found[row["table"]].append(json.loads(row["row"]))
    return found


def _ascending(value: Any) -> tuple[bool, Any]:
    """A sort key that puts None first, as Spark's ascending order does."""
    return (value is not None, value)


def _daily_top(daily: DataFrame, key: str, top_n: int) -> list[tuple[str, str, int]]:
    """Tokens per day for the ``top_n`` keys by total, the rest summed as ``OTHERS``."""
    totals = daily.groupBy(key).agg(F.sum("tokens").alias("total"))
    ranked = totals.select(key, F.row_number().over(Window.orderBy(F.desc("total"), F.asc(key))).alias("rank"))
    leaders = ranked.filter(F.col("rank") <= top_n).select(F.col(key).alias("leader"), F.lit(True).alias("led"))
    # Null-safe: a null key is a leader like any other (it reads NONE).
    marked = daily.join(leaders, daily[key].eqNullSafe(leaders["leader"]), "left")
    label = F.when(F.col("led"), F.coalesce(daily[key], F.lit(NONE))).otherwise(F.lit(OTHERS))
    grouped = marked.groupBy("date", label.alias("label")).agg(F.sum("tokens").alias("tokens"))
    last_days = grouped.select("date").distinct().orderBy(F.desc("date")).limit(MAX_DAYS_CHARTED)
    rows = _rows(grouped.join(last_days, "date").orderBy("date", "label"))
    return [(row["date"], row["label"], int(row["tokens"])) for row in rows]


def _denials_top(denials: DataFrame, key: str, top_n: int) -> list[tuple[str, int, int]]:
    per_key = denials.groupBy(key).agg(
        F.sum(F.when(F.col("kind") == "refusal", F.col("denials")).otherwise(0)).alias("refusals"),
        F.sum(F.when(F.col("kind") == "authentication", F.col("denials")).otherwise(0)).alias("authentication"),
        F.sum("denials").alias("total"),
    )
    rows = _rows(per_key.orderBy(F.desc("total"), F.asc(key)).limit(top_n))
    return [(row[key] or NONE, int(row["refusals"]), int(row["authentication"])) for row in rows]


def _buckets(rows: list[dict[str, Any]], group: str | None = None) -> dict[str, dict[str, int]]:
    grouped: dict[str, dict[str, int]] = defaultdict(dict)
    for row in rows:
        grouped[row[group] if group else ""][row["bucket"]] = int(row["tokens"])
    return dict(grouped)


def collect(
    tables: dict[str, DataFrame],
    *,
    top_n: int,
    events: int,
    span_start_ms: int,
    span_end_ms: int,
    as_of_ms: int,
) -> ReportData:
    """The report's numbers from the written tables (``job.TABLES``); each query returns a bounded result,
    and the queries run side by side."""
    impersonation = tables["impersonation_matrix"]
    bursts = tables["denial_bursts"]
    pairs = impersonation.filter(F.col("tokens") > 0)
    top_pair_requesters = pairs.groupBy("token_requester").agg(F.sum("tokens").alias("t"))
    top_pair_owners = pairs.groupBy("owner").agg(F.sum("tokens").alias("t"))
    matrix = pairs.join(
        top_pair_requesters.orderBy(F.desc("t"), "token_requester").limit(top_n).select("token_requester"),
        "token_requester",
    ).join(top_pair_owners.orderBy(F.desc("t"), "owner").limit(top_n).select("owner"), "owner")
    queries: dict[str, Callable[[], Any]] = {
        "small": lambda: _small_tables(tables),
        "impersonation_totals": lambda: impersonation.agg(
            F.coalesce(F.sum("tokens"), F.lit(0)).alias("tokens"),
            F.coalesce(F.sum("refused"), F.lit(0)).alias("refused"),
        ).first(),
        "burst_hours": lambda: bursts.filter(F.col("is_burst")).count(),
        "matrix": lambda: _rows(matrix.orderBy("token_requester", "owner")),
        "pairs": lambda: _rows(
            impersonation.orderBy(F.desc("tokens"), F.desc("refused"), "token_requester", "owner").limit(top_n)
        ),
        "issued_by_owner": lambda: _daily_top(tables["tokens_issued_by_owner_daily"], "owner", top_n),
        "issued_by_requester": lambda: _daily_top(tables["tokens_issued_by_requester_daily"], "token_requester", top_n),
        "most_overdue": lambda: _rows(
            tables["expiry_compliance"]
            .filter(F.col("overdue_ms") > 0)
            .orderBy(F.desc("overdue_ms"), "token_id")
            .limit(top_n)
            .select("token_id", "owner", "status", "expiry_timestamp", "removed_at", "overdue_ms")
        ),
        "denials_by_principal": lambda: _denials_top(tables["denials_by_principal"], "principal", top_n),
        "denials_by_address": lambda: _denials_top(tables["denials_by_principal"], "client_address", top_n),
        "top_jobs": lambda: _rows(
            tables["tokens_by_job"]
            .orderBy(F.desc("tokens"), F.desc("last_at"), *(F.asc_nulls_first(column) for column in JOB_COLUMNS))
            .limit(top_n)
        ),
        "jobs": lambda: (
            tables["tokens_by_job"]
            .agg(F.count(F.lit(1)).alias("jobs"), F.coalesce(F.sum("tokens"), F.lit(0)).alias("tokens"))
            .first()
        ),
        "bursts": lambda: _rows(
            bursts.filter(F.col("is_burst"))
            .orderBy(F.desc("denials"), "hour_start", "principal")
            .limit(top_n)
            .select("principal", "hour", "denials", "baseline_mean", "threshold")
        ),
    }
    found = side_by_side(queries)
    small = found["small"]
    overdue = _buckets(small["overdue_distribution"], "status")
    by_action = sorted(
        small["refusals_by_action"],
        key=lambda row: (-row["denials"], *(_ascending(row[key]) for key in ("kind", "action", "error_code"))),
    )
    lifetimes = _buckets(small["lifetime_distribution"], "kind")
    renew_counts = sorted((int(row["renewals"]), int(row["tokens"])) for row in small["renew_count_distribution"])
    summary = {
        "events": events,
        # Every issued token is in one requested-lifetime bucket, every renewal in the renewal counts.
        "tokens_issued": sum(lifetimes.get("requested", {}).values()),
        "impersonated_tokens": int(found["impersonation_totals"]["tokens"]),
        "impersonation_refused": int(found["impersonation_totals"]["refused"]),
        "renewals": sum(renewals * tokens for renewals, tokens in renew_counts),
        "refusals": sum(int(row["denials"]) for row in by_action if row["kind"] == "refusal"),
        "authentication_failures": sum(int(row["denials"]) for row in by_action if row["kind"] == "authentication"),
        "burst_hours": int(found["burst_hours"]),
        "swept_tokens": sum(overdue.get("swept", {}).values()),
        "expired_tokens": sum(overdue.get("expired", {}).values()),
        "lingering_tokens": sum(overdue.get("lingering", {}).values()),
        "jobs": int(found["jobs"]["jobs"]),
        "tokens_with_job": int(found["jobs"]["tokens"]),
    }
    return ReportData(
        summary=summary,
        span_start_ms=span_start_ms,
        span_end_ms=span_end_ms,
        as_of_ms=as_of_ms,
        top_n=top_n,
        issued_by_owner=found["issued_by_owner"],
        issued_by_requester=found["issued_by_requester"],
        impersonation=[
            (row["token_requester"], row["owner"], int(row["tokens"]), int(row["refused"])) for row in found["matrix"]
        ],
        impersonation_pairs=[
            (row["token_requester"], row["owner"], int(row["tokens"]), int(row["refused"])) for row in found["pairs"]
        ],
        lifetimes=lifetimes,
        renew_counts=renew_counts[:MAX_RENEW_COUNTS],
        max_lifetime_use=_buckets(small["max_lifetime_use"]).get("", {}),
        overdue=overdue,
        most_overdue=[row.asDict() for row in found["most_overdue"]],
        denials_by_principal=found["denials_by_principal"],
        denials_by_address=found["denials_by_address"],
        refusals_by_action=by_action[: top_n * 2],
        bursts=[row.asDict() for row in found["bursts"]],
        top_owners=sorted(small["top_owners"], key=lambda row: row["rank"]),
        top_requesters=sorted(small["top_requesters"], key=lambda row: row["rank"]),
        top_jobs=[row.asDict() for row in found["top_jobs"]],
    )
