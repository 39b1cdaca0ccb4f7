"""The report's numbers: small aggregates of the figure tables, collected to the driver as plain values.

``collect`` is the only place rows reach the driver, and every query in it is bounded: by the bucket
lists, by ``top_n``, or by days x (``top_n`` + 1) for the daily charts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from app.analytics.charts import NONE, OTHERS

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


# --- collecting ----------------------------------------------------------------------------------------


def _rows(frame: DataFrame) -> list[Row]:
    return frame.collect()


def _sum(frame: DataFrame, column: str, condition: Any = None) -> int:
    if condition is not None:
        frame = frame.filter(condition)
    row = frame.agg(F.sum(column).alias("total")).first()
    return int(row["total"] or 0) if row is not None else 0


def _daily_top(daily: DataFrame, key: str, top_n: int) -> list[tuple[str, str, int]]:
    """Tokens per day for the ``top_n`` keys by total, the rest summed as ``OTHERS``."""
    leaders = [
        row[key]
        for row in _rows(
            daily.groupBy(key).agg(F.sum("tokens").alias("total")).orderBy(F.desc("total"), F.asc(key)).limit(top_n)
        )
    ]
    label = F.when(F.col(key).isin(leaders), F.coalesce(F.col(key), F.lit(NONE))).otherwise(F.lit(OTHERS))
    if any(leader is None for leader in leaders):
        label = F.when(F.col(key).isNull(), F.lit(NONE)).otherwise(label)
    grouped = daily.groupBy("date", label.alias("label")).agg(F.sum("tokens").alias("tokens"))
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


def _buckets(rows: list[Row], group: str | None = None) -> dict[str, dict[str, int]]:
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
    """The report's numbers from the written tables (``job.TABLES``); each query returns a bounded result."""
    compliance = tables["expiry_compliance"]
    overdue = _buckets(_rows(tables["overdue_distribution"]), "status")
    by_action = _rows(tables["refusals_by_action"].orderBy(F.desc("denials"), "kind", "action", "error_code"))
    impersonation = tables["impersonation_matrix"]
    bursts = tables["denial_bursts"]
    summary = {
        "events": events,
        "tokens_issued": _sum(tables["tokens_issued_by_owner_daily"], "tokens"),
        "impersonated_tokens": _sum(impersonation, "tokens"),
        "impersonation_refused": _sum(impersonation, "refused"),
        "renewals": _sum(tables["token_renewals"], "renewals"),
        "refusals": sum(int(row["denials"]) for row in by_action if row["kind"] == "refusal"),
        "authentication_failures": sum(int(row["denials"]) for row in by_action if row["kind"] == "authentication"),
        "burst_hours": bursts.filter(F.col("is_burst")).count(),
        "swept_tokens": sum(overdue.get("swept", {}).values()),
        "expired_tokens": sum(overdue.get("expired", {}).values()),
        "lingering_tokens": sum(overdue.get("lingering", {}).values()),
    }
    pairs = impersonation.filter(F.col("tokens") > 0)
    top_pair_requesters = pairs.groupBy("token_requester").agg(F.sum("tokens").alias("t"))
    top_pair_owners = pairs.groupBy("owner").agg(F.sum("tokens").alias("t"))
    matrix = pairs.join(
        top_pair_requesters.orderBy(F.desc("t"), "token_requester").limit(top_n).select("token_requester"),
        "token_requester",
    ).join(top_pair_owners.orderBy(F.desc("t"), "owner").limit(top_n).select("owner"), "owner")
    return ReportData(
        summary=summary,
        span_start_ms=span_start_ms,
        span_end_ms=span_end_ms,
        as_of_ms=as_of_ms,
        top_n=top_n,
        issued_by_owner=_daily_top(tables["tokens_issued_by_owner_daily"], "owner", top_n),
        issued_by_requester=_daily_top(tables["tokens_issued_by_requester_daily"], "token_requester", top_n),
        impersonation=[
            (row["token_requester"], row["owner"], int(row["tokens"]), int(row["refused"]))
            for row in _rows(matrix.orderBy("token_requester", "owner"))
        ],
        impersonation_pairs=[
            (row["token_requester"], row["owner"], int(row["tokens"]), int(row["refused"]))
            for row in _rows(
                impersonation.orderBy(F.desc("tokens"), F.desc("refused"), "token_requester", "owner").limit(top_n)
            )
        ],
        lifetimes=_buckets(_rows(tables["lifetime_distribution"]), "kind"),
        renew_counts=[
            (int(row["renewals"]), int(row["tokens"]))
            for row in _rows(tables["renew_count_distribution"].orderBy("renewals").limit(MAX_RENEW_COUNTS))
        ],
        max_lifetime_use=_buckets(_rows(tables["max_lifetime_use"])).get("", {}),
        overdue=overdue,
        most_overdue=[
            row.asDict()
            for row in _rows(
                compliance.filter(F.col("overdue_ms") > 0)
                .orderBy(F.desc("overdue_ms"), "token_id")
                .limit(top_n)
                .select("token_id", "owner", "status", "expiry_timestamp", "removed_at", "overdue_ms")
            )
        ],
        denials_by_principal=_denials_top(tables["denials_by_principal"], "principal", top_n),
        denials_by_address=_denials_top(tables["denials_by_principal"], "client_address", top_n),
        refusals_by_action=[row.asDict() for row in by_action[: top_n * 2]],
        bursts=[
            row.asDict()
            for row in _rows(
                bursts.filter(F.col("is_burst"))
                .orderBy(F.desc("denials"), "hour_start", "principal")
                .limit(top_n)
                .select("principal", "hour", "denials", "baseline_mean", "threshold")
            )
        ],
        top_owners=[row.asDict() for row in _rows(tables["top_owners"].orderBy("rank"))],
        top_requesters=[row.asDict() for row in _rows(tables["top_requesters"].orderBy("rank"))],
    )
