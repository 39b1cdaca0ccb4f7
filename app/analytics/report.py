"""The report page: ``ReportData`` drawn into one self-contained HTML file through a Jinja2 template.

The template (``templates/report.html.j2``, package data) autoescapes everything: principals and addresses
come from whoever calls the service. Charts are embedded as base64 PNG and the page carries its own CSS,
so the file opens offline and links to nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from app.analytics import charts
from app.analytics.charts import NONE, Chart
from app.analytics.report_data import ReportData
from app.analytics.transforms import (
    BURST_BASELINE_HOURS,
    BURST_MIN_DENIALS,
    BURST_STDDEVS,
    LIFETIME_BUCKETS,
    MAX_LIFETIME_USE_BUCKETS,
    OVERDUE_BUCKETS,
    SERVER_DEFAULT,
    span_hours,
)

TEMPLATE = "report.html.j2"
SUMMARY_LABELS = {
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
    "jobs": "jobs named by token creates",
    "tokens_with_job": "tokens issued for a named job",
}
OVERDUE_STATUSES = ("swept", "expired", "lingering")


def utc_time(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(ms: int | None) -> str:
    """The two largest units: ``1 d 1 h``, ``5 min``, ``42 s``."""
    if ms is None:
        return ""
    seconds = ms // 1000
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes)
    return " ".join(parts[:2]) or f"{seconds} s"


def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("app.analytics", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["utc_time"] = utc_time
    environment.filters["duration"] = duration
    environment.globals["NONE"] = NONE
    return environment


def _charts(data: ReportData) -> dict[str, Chart | None]:
    """Every chart of the page, None where its section has no data."""
    requested = data.lifetimes.get("requested", {})
    granted = data.lifetimes.get("granted", {})
    lifetime_labels = [SERVER_DEFAULT, *(bucket.label for bucket in LIFETIME_BUCKETS)]
    overdue_labels = [bucket.label for bucket in OVERDUE_BUCKETS]
    use_labels = [label for label, _lower, _upper in MAX_LIFETIME_USE_BUCKETS]
    return {
        "issued_by_owner": charts.stacked_daily(data.issued_by_owner, f"By owner (top {data.top_n})")
        if data.issued_by_owner
        else None,
        "issued_by_requester": charts.stacked_daily(data.issued_by_requester, f"By requester (top {data.top_n})")
        if data.issued_by_owner
        else None,
        "impersonation": charts.impersonation_matrix(data.impersonation) if data.impersonation else None,
        "lifetimes": charts.bars(
            lifetime_labels,
            {
                "requested": [requested.get(label, 0) for label in lifetime_labels],
                "granted": [granted.get(label, 0) for label in lifetime_labels],
            },
            "Requested and granted maximum lifetimes of issued tokens",
            xlabel="maximum lifetime",
            ylabel="tokens issued",
        )
        if requested or granted
        else None,
        "renew_counts": charts.bars(
            [str(renewals) for renewals, _tokens in data.renew_counts],
            {"tokens": [tokens for _renewals, tokens in data.renew_counts]},
            "Renewals per token",
            xlabel="renewals in the period",
            ylabel="tokens",
        )
        if data.renew_counts
        else None,
        "max_lifetime_use": charts.bars(
            use_labels,
            {"tokens": [data.max_lifetime_use.get(label, 0) for label in use_labels]},
            "How far renewals reach into the maximum lifetime (renewed tokens)",
            xlabel="expiry after the last renewal, as a share of the maximum lifetime",
            ylabel="tokens",
        )
        if data.max_lifetime_use
        else None,
        "overdue": charts.bars(
            overdue_labels,
            {
                status: [data.overdue.get(status, {}).get(label, 0) for label in overdue_labels]
                for status in OVERDUE_STATUSES
                if status in data.overdue
            },
            "Time past expiry",
            xlabel="time from expiry to removal (or to the as-of time)",
            ylabel="tokens",
        )
        if data.overdue
        else None,
        "denials_by_principal": charts.denials(data.denials_by_principal, "By principal")
        if data.denials_by_principal
        else None,
        "denials_by_address": charts.denials(data.denials_by_address, "By client address")
        if data.denials_by_principal
        else None,
        "bursts": charts.bursts(data.bursts) if data.bursts else None,
    }


def render_html(data: ReportData) -> str:
    """The whole report as one self-contained HTML page."""
    context: dict[str, Any] = {
        "data": data,
        "charts": _charts(data),
        "summary_labels": SUMMARY_LABELS,
        "burst_min_denials": BURST_MIN_DENIALS,
        "burst_stddevs": f"{BURST_STDDEVS:g}",
        "burst_baseline_hours": BURST_BASELINE_HOURS,
        "span_hours": span_hours(data.span_start_ms, data.span_end_ms),
    }
    return _environment().get_template(TEMPLATE).render(context)
