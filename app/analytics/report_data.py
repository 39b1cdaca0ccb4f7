"""The report's numbers: small aggregates of the figure tables, collected to the driver as plain values.

``collect`` is the only place rows reach the driver, and every query in it is bounded: by the bucket
lists, by ``top_n``, by the distinct renewal counts, or by days x (``top_n`` + 1) for the daily charts.

Each Spark query costs the driver its planning, code generation and a job, whatever its size, so the
report asks one: every bounded result (the small tables whole, the top-N lists, each daily chart's leaders
with the rest summed, the totals) comes back as JSON text tagged with its name in one union, and is sorted
on the driver as Spark's ``orderBy`` would have sorted it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from app.analytics.charts import NONE, OTHERS
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


def _as_json(name: str, frame: DataFrame) -> DataFrame:
    """``frame``'s rows as JSON text (nulls kept) tagged with ``name``, so that frames of different columns
    share one result."""
    return frame.select(
        F.lit(name).alias("table"),
        F.to_json(F.struct(*frame.columns), {"ignoreNullFields": "false"}).alias("row"),
    )


def _all_rows(frames: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Every row of every frame (each bounded), in one query: one union of the rows as tagged JSON. The
    order of rows is not kept: callers sort them as Spark would (``_ordered``)."""
    tagged = [_as_json(name, frame) for name, frame in frames.items()]
    union = tagged[0]
    for other in tagged[1:]:
        union = union.unionAll(other)
    found: dict[str, list[dict[str, Any]]] = {name: [] for name in frames}
    for row in union.collect():
        found[row["table"]].append(json.loads(row["row"]))
    return found


def _ascending(value: Any) -> tuple[bool, Any]:
    """A sort key that puts None first, as Spark's ascending order does."""
    return (value is not None, value)


def _ordered(rows: list[dict[str, Any]], *order: str) -> list[dict[str, Any]]:
    """``rows`` sorted as Spark's ``orderBy`` sorts them: each of ``order`` a column, ``-column`` for
    descending (nulls first ascending, last descending). The orders used here are total."""
    ordered = list(rows)
    for column in reversed(order):  # stable sorts, the last key first
        ordered.sort(key=_ascending_by(column.lstrip("-")), reverse=column.startswith("-"))
    return ordered


def _ascending_by(name: str) -> Callable[[dict[str, Any]], tuple[bool, Any]]:
    return lambda row: _ascending(row[name])


def _daily_top(daily: DataFrame, key: str, top_n: int) -> DataFrame:
    """Tokens per day (``date, label, tokens``) for the ``top_n`` keys by total, the rest summed as
    ``OTHERS``, over the last ``MAX_DAYS_CHARTED`` days."""
    totals = daily.groupBy(key).agg(F.sum("tokens").alias("total"))
    ranked = totals.select(key, F.row_number().over(Window.orderBy(F.desc("total"), F.asc(key))).alias("rank"))
    leaders = ranked.filter(F.col("rank") <= top_n).select(F.col(key).alias("leader"), F.lit(True).alias("led"))
    # Null-safe: a null key is a leader like any other (it reads NONE).
    marked = daily.join(leaders, daily[key].eqNullSafe(leaders["leader"]), "left")
    label = F.when(F.col("led"), F.coalesce(daily[key], F.lit(NONE))).otherwise(F.lit(OTHERS))
    grouped = marked.groupBy("date", label.alias("label")).agg(F.sum("tokens").alias("tokens"))
    last_days = grouped.select("date").distinct().orderBy(F.desc("date")).limit(MAX_DAYS_CHARTED)
    return grouped.join(last_days, "date")


def _denials_top(denials: DataFrame, key: str, top_n: int) -> DataFrame:
    """The ``top_n`` values of ``key`` by denials: ``key, refusals, authentication, total``."""
    per_key = denials.groupBy(key).agg(
        F.sum(F.when(F.col("kind") == "refusal", F.col("denials")).otherwise(0)).alias("refusals"),
        F.sum(F.when(F.col("kind") == "authentication", F.col("denials")).otherwise(0)).alias("authentication"),
        F.sum("denials").alias("total"),
    )
    return per_key.orderBy(F.desc("total"), F.asc(key)).limit(top_n)


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
    """The report's numbers from the written tables (``job.TABLES``), in one query: each part of it
    returns a bounded result, and the rows come back as tagged JSON (``_all_rows``)."""
    impersonation = tables["impersonation_matrix"]
    bursts = tables["denial_bursts"].filter(F.col("is_burst"))
    pairs = impersonation.filter(F.col("tokens") > 0)
    top_pair_requesters = pairs.groupBy("token_requester").agg(F.sum("tokens").alias("t"))
    top_pair_owners = pairs.groupBy("owner").agg(F.sum("tokens").alias("t"))
    matrix = pairs.join(
        top_pair_requesters.orderBy(F.desc("t"), "token_requester").limit(top_n).select("token_requester"),
        "token_requester",
    ).join(top_pair_owners.orderBy(F.desc("t"), "owner").limit(top_n).select("owner"), "owner")
    jobs = tables["tokens_by_job"]
    parts: dict[str, DataFrame] = {name: tables[name] for name in SMALL_TABLES}
    parts |= {
        "impersonation_totals": impersonation.agg(
            F.coalesce(F.sum("tokens"), F.lit(0)).alias("tokens"),
            F.coalesce(F.sum("refused"), F.lit(0)).alias("refused"),
        ),
        "burst_hours": bursts.agg(F.count(F.lit(1)).alias("hours")),
        "matrix": matrix.select("token_requester", "owner", "tokens", "refused"),
        "pairs": impersonation.orderBy(F.desc("tokens"), F.desc("refused"), "token_requester", "owner").limit(top_n),
        "issued_by_owner": _daily_top(tables["tokens_issued_by_owner_daily"], "owner", top_n),
        "issued_by_requester": _daily_top(tables["tokens_issued_by_requester_daily"], "token_requester", top_n),
        "most_overdue": (
            tables["expiry_compliance"]
            .filter(F.col("overdue_ms") > 0)
            .orderBy(F.desc("overdue_ms"), "token_id")
            .limit(top_n)
            .select("token_id", "owner", "status", "expiry_timestamp", "removed_at", "overdue_ms")
        ),
        "denials_by_principal": _denials_top(tables["denials_by_principal"], "principal", top_n),
        "denials_by_address": _denials_top(tables["denials_by_principal"], "client_address", top_n),
        "top_jobs": jobs.orderBy(
            F.desc("tokens"), F.desc("last_at"), *(F.asc_nulls_first(column) for column in JOB_COLUMNS)
        ).limit(top_n),
        "jobs": jobs.agg(F.count(F.lit(1)).alias("jobs"), F.coalesce(F.sum("tokens"), F.lit(0)).alias("tokens")),
        "bursts": (
            bursts.orderBy(F.desc("denials"), "hour_start", "principal")
            .limit(top_n)
            .select("principal", "hour_start", "hour", "denials", "baseline_mean", "threshold")
        ),
    }
    found = _all_rows(parts)

    (impersonation_totals,) = found["impersonation_totals"]
    (job_totals,) = found["jobs"]
    (burst_hours,) = found["burst_hours"]
    matrix_rows = _ordered(found["matrix"], "token_requester", "owner")
    pair_rows = _ordered(found["pairs"], "-tokens", "-refused", "token_requester", "owner")
    most_overdue = _ordered(found["most_overdue"], "-overdue_ms", "token_id")
    top_jobs = _ordered(found["top_jobs"], "-tokens", "-last_at", *JOB_COLUMNS)
    burst_rows = _ordered(found["bursts"], "-denials", "hour_start", "principal")
    for row in burst_rows:
        del row["hour_start"]

    def daily(name: str) -> list[tuple[str, str, int]]:
        return [(row["date"], row["label"], int(row["tokens"])) for row in _ordered(found[name], "date", "label")]

    def denials_top(name: str, key: str) -> list[tuple[str, int, int]]:
        rows = _ordered(found[name], "-total", key)
        return [(row[key] or NONE, int(row["refusals"]), int(row["authentication"])) for row in rows]

    overdue = _buckets(found["overdue_distribution"], "status")
    by_action = sorted(
        found["refusals_by_action"],
        key=lambda row: (-row["denials"], *(_ascending(row[key]) for key in ("kind", "action", "error_code"))),
    )
    lifetimes = _buckets(found["lifetime_distribution"], "kind")
    renew_counts = sorted((int(row["renewals"]), int(row["tokens"])) for row in found["renew_count_distribution"])
    summary = {
        "events": events,
        # Every issued token is in one requested-lifetime bucket, every renewal in the renewal counts.
        "tokens_issued": sum(lifetimes.get("requested", {}).values()),
        "impersonated_tokens": int(impersonation_totals["tokens"]),
        "impersonation_refused": int(impersonation_totals["refused"]),
        "renewals": sum(renewals * tokens for renewals, tokens in renew_counts),
        "refusals": sum(int(row["denials"]) for row in by_action if row["kind"] == "refusal"),
        "authentication_failures": sum(int(row["denials"]) for row in by_action if row["kind"] == "authentication"),
        "burst_hours": int(burst_hours["hours"]),
        "swept_tokens": sum(overdue.get("swept", {}).values()),
        "expired_tokens": sum(overdue.get("expired", {}).values()),
        "lingering_tokens": sum(overdue.get("lingering", {}).values()),
        "jobs": int(job_totals["jobs"]),
        "tokens_with_job": int(job_totals["tokens"]),
    }
    return ReportData(
        summary=summary,
        span_start_ms=span_start_ms,
        span_end_ms=span_end_ms,
        as_of_ms=as_of_ms,
        top_n=top_n,
        issued_by_owner=daily("issued_by_owner"),
        issued_by_requester=daily("issued_by_requester"),
        impersonation=[
            (row["token_requester"], row["owner"], int(row["tokens"]), int(row["refused"])) for row in matrix_rows
        ],
        impersonation_pairs=[
            (row["token_requester"], row["owner"], int(row["tokens"]), int(row["refused"])) for row in pair_rows
        ],
        lifetimes=lifetimes,
        renew_counts=renew_counts[:MAX_RENEW_COUNTS],
        max_lifetime_use=_buckets(found["max_lifetime_use"]).get("", {}),
        overdue=overdue,
        most_overdue=most_overdue,
        denials_by_principal=denials_top("denials_by_principal", "principal"),
        denials_by_address=denials_top("denials_by_address", "client_address"),
        refusals_by_action=by_action[: top_n * 2],
        bursts=burst_rows,
        top_owners=sorted(found["top_owners"], key=lambda row: row["rank"]),
        top_requesters=sorted(found["top_requesters"], key=lambda row: row["rank"]),
        top_jobs=top_jobs,
    )
