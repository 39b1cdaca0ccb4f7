"""The human side of the audit report: small aggregates of the figure tables, drawn into one HTML file.

``collect`` is the only place rows reach the driver, and every query in it is bounded: by the bucket
lists, by ``top_n``, or by days x (``top_n`` + 1) for the daily charts. ``render_html`` is pure Python:
matplotlib figures (``Figure`` objects, no pyplot state) are embedded as base64 PNG and the page carries
its own CSS, so the file opens offline and links to nothing. Every name from the audit trail is escaped:
principals are chosen by whoever calls the service.
"""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, StrMethodFormatter
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from app.analytics.transforms import (
    BURST_MIN_DENIALS,
    BURST_STDDEVS,
    LIFETIME_BUCKETS,
    MAX_LIFETIME_USE_BUCKETS,
    OVERDUE_BUCKETS,
    SERVER_DEFAULT,
)

OTHERS = "(others)"
NONE = "(none)"
MAX_DAYS_CHARTED = 366
MAX_RENEW_COUNTS = 50


@dataclass
class ReportData:
    """Everything the page shows, as plain Python values."""

    summary: dict[str, Any]
    span_start_ms: int
    span_end_ms: int
    now_ms: int
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
    now_ms: int,
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
        now_ms=now_ms,
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


# --- drawing -------------------------------------------------------------------------------------------

_COLOURS = ("#3b6ea5", "#e08a2c", "#4f9a5b", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _image(figure: Figure, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(figure)}">'


def _figure(width: float = 9.0, height: float = 3.6) -> tuple[Figure, Any]:
    figure = Figure(figsize=(width, height), dpi=96, layout="constrained")
    return figure, figure.subplots()


def _counts_on(axis: Any) -> None:
    """Whole numbers with thousands separators, never an offset such as ``1e6``."""
    axis.set_major_locator(MaxNLocator(integer=True))
    axis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def _stacked_daily(rows: Sequence[tuple[str, str, int]], title: str) -> str:
    dates = sorted({date for date, _label, _tokens in rows})
    totals: dict[str, int] = defaultdict(int)
    for _date, label, tokens in rows:
        totals[label] += tokens
    labels = sorted(totals, key=lambda label: (label == OTHERS, -totals[label], label))
    counts = {(date, label): tokens for date, label, tokens in rows}
    figure, axes = _figure()
    bottoms = [0] * len(dates)
    for index, label in enumerate(labels):
        heights = [counts.get((date, label), 0) for date in dates]
        axes.bar(dates, heights, bottom=bottoms, label=label, color=_COLOURS[index % len(_COLOURS)])
        bottoms = [bottom + height for bottom, height in zip(bottoms, heights, strict=True)]
    axes.set_ylabel("tokens issued")
    _counts_on(axes.yaxis)
    axes.set_title(title)
    axes.tick_params(axis="x", labelrotation=60, labelsize=7)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _image(figure, title)


def _matrix(rows: Sequence[tuple[str, str, int, int]]) -> str:
    requesters = sorted({row[0] for row in rows})
    owners = sorted({row[1] for row in rows})
    cells = [[0] * len(owners) for _ in requesters]
    for requester, owner, tokens, _refused in rows:
        cells[requesters.index(requester)][owners.index(owner)] = tokens
    figure, axes = _figure(max(4.0, 1.0 + 0.5 * len(owners)), max(2.5, 1.0 + 0.35 * len(requesters)))
    image = axes.imshow(cells, cmap="Blues", aspect="auto", vmin=0)
    axes.set_xticks(range(len(owners)), owners, rotation=60, ha="right", fontsize=7)
    axes.set_yticks(range(len(requesters)), requesters, fontsize=7)
    axes.set_xlabel("owner")
    axes.set_ylabel("requester")
    peak = max((max(line) for line in cells), default=0)
    for y, line in enumerate(cells):
        for x, tokens in enumerate(line):
            if tokens:
                colour = "white" if tokens > peak / 2 else "black"
                axes.text(x, y, str(tokens), ha="center", va="center", fontsize=7, color=colour)
    _counts_on(figure.colorbar(image, ax=axes, label="tokens issued").ax.yaxis)
    return _image(figure, "Requester to owner impersonation matrix")


def _bars(labels: Sequence[str], series: dict[str, Sequence[float]], title: str, ylabel: str) -> str:
    figure, axes = _figure(height=3.2)
    width = 0.8 / max(1, len(series))
    for index, (name, values) in enumerate(series.items()):
        positions = [x + (index - (len(series) - 1) / 2) * width for x in range(len(labels))]
        axes.bar(positions, values, width=width, label=name, color=_COLOURS[index % len(_COLOURS)])
    axes.set_xticks(range(len(labels)), labels, fontsize=8)
    _counts_on(axes.yaxis)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if len(series) > 1:
        axes.legend(fontsize=8)
    return _image(figure, title)


def _horizontal(rows: Sequence[tuple[str, int, int]], title: str) -> str:
    names = [name for name, _refusals, _auth in rows][::-1]
    refusals = [refused for _name, refused, _auth in rows][::-1]
    failures = [auth for _name, _refused, auth in rows][::-1]
    figure, axes = _figure(height=max(2.0, 0.8 + 0.28 * len(rows)))
    axes.barh(names, refusals, label="refused requests", color=_COLOURS[3])
    axes.barh(names, failures, left=refusals, label="authentication failures", color=_COLOURS[1])
    axes.tick_params(axis="y", labelsize=7)
    _counts_on(axes.xaxis)
    axes.set_xlabel("denials")
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _image(figure, title)


def _bursts_chart(bursts: Sequence[dict[str, Any]]) -> str:
    labels = [f"{burst['principal'] or NONE}\n{burst['hour']}" for burst in bursts]
    figure, axes = _figure(height=max(2.0, 0.8 + 0.4 * len(bursts)))
    positions = list(range(len(bursts)))[::-1]
    axes.barh(positions, [burst["denials"] for burst in bursts], color=_COLOURS[3], label="denials in the hour")
    axes.scatter(
        [burst["threshold"] for burst in bursts], positions, marker="|", s=200, color="black", label="threshold"
    )
    axes.set_yticks(positions, labels, fontsize=7)
    _counts_on(axes.xaxis)
    axes.set_xlabel("denials per hour")
    axes.set_title("Bursts against each principal's own baseline")
    axes.legend(fontsize=8)
    return _image(figure, "Denial bursts")


# --- the page ------------------------------------------------------------------------------------------


def _time(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(ms: int | None) -> str:
    if ms is None:
        return ""
    seconds = ms // 1000
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes)
    return " ".join(parts[:2]) or f"{seconds} s"


def _cell(value: Any) -> str:
    if value is None:
        return "<td>" + NONE + "</td>"
    if isinstance(value, float):
        return f'<td class="n">{value:.2f}</td>'
    if isinstance(value, int):
        return f'<td class="n">{value}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], table_id: str) -> str:
    if not rows:
        return '<p class="empty">None in this period.</p>'
    head = "".join(f"<th>{html.escape(header)}</th>" for header in headers)
    body = "".join("<tr>" + "".join(_cell(value) for value in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _or_empty(present: bool, draw: Any) -> str:
    return draw() if present else '<p class="empty">No data in this period.</p>'


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; } .empty { color: #777; font-style: italic; }
img { max-width: 100%; display: block; margin: 0.5em 0; }
dl.summary { display: grid; grid-template-columns: max-content max-content; gap: 0.2em 1.5em; }
dl.summary dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
"""

_SUMMARY_LABELS = {
    "events": "audit events in the period",
    "tokens_issued": "tokens issued",
    "impersonated_tokens": "tokens issued for another owner",
    "impersonation_refused": "refused creates for another owner",
    "renewals": "renewals",
    "refusals": "refused requests",
    "authentication_failures": "authentication failures",
    "burst_hours": "burst hours flagged",
    "swept_tokens": "tokens removed by the sweeper",
    "expired_tokens": "tokens removed by an expire request",
    "lingering_tokens": "tokens past expiry, still present",
}


def render_html(data: ReportData) -> str:
    """The whole report as one self-contained HTML page."""
    summary = "".join(
        f'<dt>{html.escape(label)}</dt><dd id="summary-{key}">{data.summary.get(key, 0)}</dd>'
        for key, label in _SUMMARY_LABELS.items()
    )
    requested = data.lifetimes.get("requested", {})
    granted = data.lifetimes.get("granted", {})
    lifetime_labels = [bucket.label for bucket in LIFETIME_BUCKETS]
    overdue_labels = [bucket.label for bucket in OVERDUE_BUCKETS]
    use_labels = [label for label, _lower, _upper in MAX_LIFETIME_USE_BUCKETS]
    sections = [
        "<h2>Tokens issued per day</h2>",
        _or_empty(
            bool(data.issued_by_owner),
            lambda: (
                _stacked_daily(data.issued_by_owner, f"By owner (top {data.top_n})")
                + _stacked_daily(data.issued_by_requester, f"By requester (top {data.top_n})")
            ),
        ),
        "<h2>Impersonation: requester &rarr; owner</h2>",
        "<p>Tokens a principal created for another owner (KIP-373 <code>CreateTokens</code> on the owner).</p>",
        _or_empty(bool(data.impersonation), lambda: _matrix(data.impersonation)),
        _table(
            ["requester", "owner", "issued", "refused"],
            [list(row) for row in data.impersonation_pairs],
            "impersonation",
        ),
        "<h2>Lifetimes</h2>",
        _or_empty(
            bool(requested or granted),
            lambda: _bars(
                [SERVER_DEFAULT, *lifetime_labels],
                {
                    "requested": [requested.get(label, 0) for label in [SERVER_DEFAULT, *lifetime_labels]],
                    "granted": [granted.get(label, 0) for label in [SERVER_DEFAULT, *lifetime_labels]],
                },
                "Requested and granted maximum lifetimes of issued tokens",
                "tokens",
            ),
        ),
        "<h2>Renewals</h2>",
        _or_empty(
            bool(data.renew_counts),
            lambda: _bars(
                [str(renewals) for renewals, _tokens in data.renew_counts],
                {"tokens": [tokens for _renewals, tokens in data.renew_counts]},
                "Renewals per token",
                "tokens",
            ),
        ),
        _or_empty(
            bool(data.max_lifetime_use),
            lambda: _bars(
                use_labels,
                {"tokens": [data.max_lifetime_use.get(label, 0) for label in use_labels]},
                "How far renewals reach into the maximum lifetime (renewed tokens)",
                "tokens",
            ),
        ),
        "<h2>Expiry compliance</h2>",
        "<p>How long tokens stayed in ZooKeeper after their expiry: the sweeper's lag, deletions by request, "
        f"and tokens still present at {html.escape(_time(data.now_ms))}.</p>",
        _or_empty(
            bool(data.overdue),
            lambda: _bars(
                overdue_labels,
                {
                    status: [data.overdue.get(status, {}).get(label, 0) for label in overdue_labels]
                    for status in ("swept", "expired", "lingering")
                    if status in data.overdue
                },
                "Time past expiry",
                "tokens",
            ),
        ),
        _table(
            ["token", "owner", "status", "expiry", "removed", "overdue"],
            [
                [
                    row["token_id"],
                    row["owner"],
                    row["status"],
                    _time(row["expiry_timestamp"]),
                    _time(row["removed_at"]) or "still present",
                    _duration(row["overdue_ms"]),
                ]
                for row in data.most_overdue
            ],
            "most-overdue",
        ),
        "<h2>Refusals and authentication failures</h2>",
        _or_empty(
            bool(data.denials_by_principal),
            lambda: (
                _horizontal(data.denials_by_principal, "By principal")
                + _horizontal(data.denials_by_address, "By client address")
            ),
        ),
        _table(
            ["kind", "action", "Kafka error", "denials"],
            [[row["kind"], row["action"], row["error_code"], row["denials"]] for row in data.refusals_by_action],
            "refusals-by-action",
        ),
        "<h3>Bursts</h3>",
        f"<p>An hour is flagged when a principal has at least {BURST_MIN_DENIALS} denials in it and more than "
        f"the mean plus {BURST_STDDEVS:g} standard deviations of that principal's other hours in the period "
        "(quiet hours count as zero).</p>",
        _or_empty(bool(data.bursts), lambda: _bursts_chart(data.bursts)),
        _table(
            ["principal", "hour", "denials", "baseline mean", "threshold"],
            [
                [row["principal"], row["hour"], row["denials"], row["baseline_mean"], row["threshold"]]
                for row in data.bursts
            ],
            "bursts",
        ),
        f"<h2>Top {data.top_n} owners and requesters</h2>",
        _table(
            ["rank", "owner", "tokens", "issued by others", "requesters", "renewals"],
            [
                [row["rank"], row["owner"], row["tokens"], row["impersonated"], row["requesters"], row["renewals"]]
                for row in data.top_owners
            ],
            "top-owners",
        ),
        _table(
            ["rank", "requester", "tokens", "for other owners", "owners", "refused"],
            [
                [row["rank"], row["token_requester"], row["tokens"], row["for_others"], row["owners"], row["refused"]]
                for row in data.top_requesters
            ],
            "top-requesters",
        ),
    ]
    period = f"{_time(data.span_start_ms)} to {_time(data.span_end_ms)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>kts audit report</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>kts audit report</h1><p>Period: {html.escape(period)}.</p>"
        f'<dl class="summary">{summary}</dl>' + "".join(sections) + "</body></html>\n"
    )
