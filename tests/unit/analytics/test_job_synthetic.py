"""The whole report on a fixed synthetic trail: every table and the page, pinned by digest.

The digests were taken from the report as it was before its passes were reorganised for speed; a change
to how the report is computed must leave every row of every table, and the page, as they were. A change
to what the report says (a new column, another bucket) changes them on purpose: take the new digests
from this test's failure message, and say why in the commit.

Changed on purpose (issue 33, tokens per job): the trail's service creates name jobs (derived from the rest, so the
other columns and every other table kept their digests), ``token_lifecycle`` gained the job columns, the table
``tokens_by_job`` is new, and the page has its section and two summary counts.

Changed on purpose (issue 38): the daily stacked charts draw each series as one collection of bars, not an artist
per bar. The pictures look the same, but their PNG bytes differ, so ``report.html`` has new digests; the page's
text without its images (``report.html text``) did not change.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from app.analytics.job import TABLES, run_report
from app.analytics.sources import read_events
from bench.audit_synth import synthesize

MONDAY = 1_767_571_200_000  # 2026-01-05 00:00 UTC
DAY_MS = 86_400_000

# Each test runs the whole report (some 35 Spark jobs), on a machine that may be loaded.
pytestmark = pytest.mark.timeout(600)

WHOLE: dict[str, str] = {
    "token_lifecycle": "d37e7eea13e8d161",
    "tokens_issued_by_owner_daily": "110f384985044cf8",
    "tokens_issued_by_requester_daily": "c78765749d3423f2",
    "impersonation_matrix": "ef561491ab8ecab5",
    "lifetime_distribution": "e721eb3bdb69b808",
    "token_renewals": "ee5e38dc5538e9db",
    "renew_count_distribution": "6374e208039daa71",
    "max_lifetime_use": "789f88086054432f",
    "expiry_compliance": "98507909e411a7b2",
    "overdue_distribution": "af0231f206b4d226",
    "denials_by_principal": "19ba73b6e76a862a",
    "refusals_by_action": "8b0e9081dde5d558",
    "denial_bursts": "05232b5e57933443",
    "top_owners": "1ac2d951b088b3a1",
    "top_requesters": "2c16a544ed60b7a3",
    "tokens_by_job": "225e0647aa1322fb",
    "report.html": "aa56621f791ea690",
    "report.html text": "98fb52b7ef9afc82",
}
WINDOW: dict[str, str] = {
    "token_lifecycle": "c27530a7ae10e711",
    "tokens_issued_by_owner_daily": "8893625f79e17c30",
    "tokens_issued_by_requester_daily": "e8003fe5b1b8a4af",
    "impersonation_matrix": "7d918fa0835772d3",
    "lifetime_distribution": "52821630a9c7e2dc",
    "token_renewals": "84c3f01ad5f722f6",
    "renew_count_distribution": "e1865e3bfdc1e0cf",
    "max_lifetime_use": "31fd28e036927556",
    "expiry_compliance": "c053f1a608a8eead",
    "overdue_distribution": "fad676158ac9b7d9",
    "denials_by_principal": "a7636756da05a908",
    "refusals_by_action": "d6b76379c71b0f46",
    "denial_bursts": "798dfd7f079610f1",
    "top_owners": "92ea85ee00b104a8",
    "top_requesters": "a50e410466c3446b",
    "tokens_by_job": "638153882410b753",
    "report.html": "0fbd8765b3377804",
    "report.html text": "2e833ad33e27cb51",
}


def _value(value: Any) -> Any:
    # Floating sums may add up in another order; twelve significant digits are what the page could show.
    return float(f"{value:.12g}") if isinstance(value, float) else value


def _digests(spark: SparkSession, out: Path) -> dict[str, str]:
    found = {}
    for name in TABLES:
        table = spark.read.parquet(str(out / name))
        lines = sorted(repr(tuple(_value(row[column]) for column in sorted(table.columns))) for row in table.collect())
        text = repr(sorted(table.columns)) + "\n" + "\n".join(lines)
        found[name] = hashlib.sha256(text.encode()).hexdigest()[:16]
    page = (out / "report.html").read_text(encoding="utf-8")
    found["report.html"] = hashlib.sha256(page.encode()).hexdigest()[:16]
    found["report.html text"] = hashlib.sha256(re.sub(r"base64,[A-Za-z0-9+/=]+", "", page).encode()).hexdigest()[:16]
    return found


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trail")
    synthesize(out, events=20_000, days=4, seed=11, start_ms=MONDAY)
    return out


def test_the_report_of_the_whole_trail_is_unchanged(spark: SparkSession, trail: Path, tmp_path: Path) -> None:
    run_report(spark, read_events(spark, input_dir=trail), tmp_path / "report", top_n=5)

    found = _digests(spark, tmp_path / "report")
    assert found == WHOLE, json.dumps(found, indent=4)


def test_the_report_of_a_window_is_unchanged(spark: SparkSession, trail: Path, tmp_path: Path) -> None:
    run_report(
        spark,
        read_events(spark, input_dir=trail),
        tmp_path / "report",
        since_ms=MONDAY + DAY_MS + 7 * 3_600_000,
        until_ms=MONDAY + 3 * DAY_MS,
        top_n=5,
    )

    found = _digests(spark, tmp_path / "report")
    assert found == WINDOW, json.dumps(found, indent=4)
