"""The synthetic audit trail (``bench.audit_synth``): the exported layout, exact counts, determinism, and
events that tell a consistent story (every renewal, expire and sweep follows its token's create; sweeps
come after expiry). Spark reading it back is in tests/unit/analytics/test_job.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from app.analytics.event_files import ARROW_EVENT_SCHEMA
from bench import audit_synth as synth
from bench.audit_synth import SynthError, synthesize

MONDAY = 1_767_571_200_000  # 2026-01-05T00:00:00Z
EVENTS = 30_000


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> tuple[synth.SynthResult, pa.Table]:
    out = tmp_path_factory.mktemp("synth")
    result = synthesize(out, events=EVENTS, days=7, seed=7, start_ms=MONDAY + 5 * 3_600_000)
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table().sort_by("id")
    return result, table


def rows(table: pa.Table, action: str, outcome: str = "succeeded") -> pa.Table:
    return table.filter(pc.and_(pc.equal(table["action"], action), pc.equal(table["outcome"], outcome)))


def test_exactly_the_events_asked_for_in_the_exported_layout(
    trail: tuple[synth.SynthResult, pa.Table], tmp_path: Path
) -> None:
    result, table = trail
    assert result.events == table.num_rows == EVENTS
    assert table.schema.remove(table.schema.get_field_index("date")) == ARROW_EVENT_SCHEMA
    ids = table["id"].to_numpy()
    assert np.array_equal(ids, np.arange(1, EVENTS + 1))  # consecutive, as the database numbers them
    timestamps = table["timestamp"].to_numpy()
    assert (np.diff(timestamps) >= 0).all()  # ids follow time
    assert result.first_ms == timestamps[0] >= MONDAY and result.last_ms == timestamps[-1]
    days = (timestamps - MONDAY) // 86_400_000
    assert 6 <= days.max() <= 9  # about a week (the first days lack the renewals of older tokens)
    expected_dates = pc.strftime(pc.cast(table["timestamp"], pa.timestamp("ms", tz="UTC")), "%Y-%m-%d")
    assert table["date"].equals(expected_dates)
    assert result.days == len(set(table["date"].to_pylist()))
    for details in table["details"].to_pylist()[:2000]:
        assert isinstance(json.loads(details), dict)


def test_the_same_arguments_give_the_same_events(trail: tuple[synth.SynthResult, pa.Table], tmp_path: Path) -> None:
    _, table = trail
    synthesize(tmp_path / "again", events=EVENTS, days=7, seed=7, start_ms=MONDAY)
    again = ds.dataset(tmp_path / "again", format="parquet", partitioning="hive").to_table().sort_by("id")
    assert again.equals(table)
    synthesize(tmp_path / "other", events=EVENTS, days=7, seed=8, start_ms=MONDAY)
    other = ds.dataset(tmp_path / "other", format="parquet", partitioning="hive").to_table().sort_by("id")
    assert not other.equals(table)


def test_token_lifecycles_are_consistent(trail: tuple[synth.SynthResult, pa.Table]) -> None:
    result, table = trail
    creates = rows(table, "token.create").to_pylist()
    assert result.tokens == len(creates)
    created = {row["token_id"]: row for row in creates}
    assert len(created) == len(creates)  # unique 22-character base64url ids
    assert all(len(token_id) == 22 for token_id in created)
    for action in ("token.renew", "token.expire", "token.sweep"):
        for row in rows(table, action).to_pylist():
            origin = created[row["token_id"]]
            assert row["timestamp"] > origin["timestamp"]
            assert (row["owner"], row["token_requester"]) == (origin["owner"], origin["token_requester"])
            details = json.loads(row["details"])
            assert details["expiryTimestamp"] <= json.loads(origin["details"])["maxTimestamp"]
            if action == "token.sweep":
                assert row["principal"] is None and row["request_id"] is None and row["client_address"] is None
                assert row["timestamp"] > details["expiryTimestamp"]  # swept after expiry, with a lag
            else:
                assert row["principal"] is not None and len(row["request_id"]) == 32
    per_token = Counter(row["token_id"] for row in rows(table, "token.renew").to_pylist())
    assert max(per_token.values()) >= 5  # services renew up to the maximum lifetime


def test_created_tokens_follow_the_servers_lifetime_rules(trail: tuple[synth.SynthResult, pa.Table]) -> None:
    _, table = trail
    for row in rows(table, "token.create").to_pylist():
        details = json.loads(row["details"])
        requested = details["requestedMaxLifetimeMs"]
        granted = details["maxTimestamp"] - details["issueTimestamp"]
        assert granted == (synth.MAX_LIFETIME_MS if requested <= 0 else min(requested, synth.MAX_LIFETIME_MS))
        assert details["expiryTimestamp"] == min(details["maxTimestamp"], details["issueTimestamp"] + synth.RENEW_MS)
        assert details["issueTimestamp"] == row["timestamp"]
        if row["owner"] != row["token_requester"]:
            assert details["renewers"] == [row["token_requester"]]  # a service names itself to renew


def test_owners_are_heavy_tailed_and_a_few_services_impersonate_many(
    trail: tuple[synth.SynthResult, pa.Table],
) -> None:
    _, table = trail
    creates = rows(table, "token.create").to_pylist()
    owners = Counter(row["owner"] for row in creates)
    top_tenth = sum(count for _owner, count in owners.most_common(max(1, len(owners) // 10)))
    assert top_tenth > 0.4 * len(creates)
    impersonating = Counter(row["token_requester"] for row in creates if row["token_requester"] != row["owner"])
    assert 3 <= len(impersonating) <= len(synth.SERVICES)
    for service in impersonating:
        assert len({row["owner"] for row in creates if row["token_requester"] == service}) >= 10


def test_refusals_and_throttled_bursts_of_failed_logins_from_a_few_addresses(
    trail: tuple[synth.SynthResult, pa.Table],
) -> None:
    _, table = trail
    refused = table.filter(
        pc.and_(pc.equal(table["outcome"], "denied"), pc.not_equal(table["action"], "authentication"))
    )
    assert set(refused["error_code"].to_pylist()) == {63, 64, 65, 66}
    attempts_by_address: Counter[str] = Counter()
    summaries = 0
    for row in rows(table, "authentication", "denied").to_pylist():
        details = json.loads(row["details"])
        attempts_by_address[row["client_address"]] += details.get("attempts", 1)
        if details.get("throttled"):  # as app/domain/throttle.py reports the rest of a burst
            summaries += 1
            assert set(details) == {"attempts", "firstAttemptMs", "lastAttemptMs", "refused", "throttled"}
            assert details["firstAttemptMs"] <= details["lastAttemptMs"] <= row["timestamp"]
            assert 0 <= details["refused"] <= details["attempts"]
        else:
            assert details["scheme"] in ("basic", "bearer")
    assert summaries >= 7  # a burst or so a day
    (busiest, attempts), *_ = attempts_by_address.most_common(1)
    assert busiest.startswith(("203.0.113.", "198.51.100.")) and attempts > 100


def test_refuses_a_directory_that_holds_partitions(tmp_path: Path) -> None:
    (tmp_path / "date=2026-01-05").mkdir()
    with pytest.raises(SynthError, match="already holds date partitions"):
        synthesize(tmp_path, events=10, start_ms=MONDAY)


def audit_synth(*argv: str) -> int:
    return synth.main(list(argv))


def test_cli_writes_and_summarises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "synth"
    assert audit_synth("--events", "1_000", "--out", str(out), "--days", "3", "--start", "2026-01-05") == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("wrote 1000 events (") and line.endswith(" UTC")
    assert "2026-01-05 " in line
    assert audit_synth("--events", "10", "--out", str(out)) == 1
    assert capsys.readouterr().err.startswith("audit_synth: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["--events", "0"],
        ["--events", "x"],
        ["--events", "5", "--days", "0"],
        ["--events", "5", "--seed", "-1"],
        ["--events", "5", "--start", "5 January"],
    ],
)
def test_cli_bad_usage_exits_2(tmp_path: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        audit_synth(*argv, "--out", str(tmp_path))
    assert exited.value.code == 2
