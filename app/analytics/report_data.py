"""The report's numbers: small aggregates of the figure tables, collected to the driver as plain values.

``collect`` is the only place rows reach the driver, and every query in it is bounded: by the bucket
lists, by ``top_n``, by the distinct renewal counts, or by days x (``top_n`` + 1) for the daily charts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from app.analytics.charts import NONE, OTHERS
from app.analytics.side_by_side import side_by_side

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
        "overdue": lambda: _rows(tables["overdue_distribution"]),
        "by_action": lambda: _rows(
            tables["refusals_by_action"].orderBy(F.desc("denials"), "kind", "action", "error_code")
        ),
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
        "lifetimes": lambda: _rows(tables["lifetime_distribution"]),
        "renew_counts": lambda: _rows(tables["renew_count_distribution"].orderBy("renewals")),
        "max_lifetime_use": lambda: _rows(tables["max_lifetime_use"]),
        "most_overdue": lambda: _rows(
            tables["expiry_compliance"]
            .filter(F.col("overdue_ms") > 0)
            .orderBy(F.desc("overdue_ms"), "token_id")
            .limit(top_n)
            .select("token_id", "owner", "status", "expiry_timestamp", "removed_at", "overdue_ms")
        ),
        "denials_by_principal": lambda: _denials_top(tables["denials_by_principal"], "principal", top_n),
        "denials_by_address": lambda: _denials_top(tables["denials_by_principal"], "client_address", top_n),
        "bursts": lambda: _rows(
            bursts.filter(F.col("is_burst"))
            .orderBy(F.desc("denials"), "hour_start", "principal")
            .limit(top_n)
            .select("principal", "hour", "denials", "baseline_mean", "threshold")
        ),
        "top_owners": lambda: _rows(tables["top_owners"].orderBy("rank")),
        "top_requesters": lambda: _rows(tables["top_requesters"].orderBy("rank")),
    }
    found = side_by_side(queries)
    overdue = _buckets(found["overdue"], "status")
    by_action: list[Row] = found["by_action"]
    lifetimes = _buckets(found["lifetimes"], "kind")
    renew_counts = [(int(row["renewals"]), int(row["tokens"])) for row in found["renew_counts"]]
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
        max_lifetime_use=_buckets(found["max_lifetime_use"]).get("", {}),
        overdue=overdue,
        most_overdue=[row.asDict() for row in found["most_overdue"]],
        denials_by_principal=found["denials_by_principal"],
        denials_by_address=found["denials_by_address"],
        refusals_by_action=[row.asDict() for row in by_action[: top_n * 2]],
        bursts=[row.asDict() for row in found["bursts"]],
        top_owners=[row.asDict() for row in found["top_owners"]],
        top_requesters=[row.asDict() for row in found["top_requesters"]],
    )
