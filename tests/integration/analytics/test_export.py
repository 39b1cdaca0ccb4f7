"""``export_events`` on SQLite and PostgreSQL: the Parquet layout, incremental runs, what is held back, and
recovery from a run that died before it recorded its state. Events are written by the service's own sink."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from sqlalchemy import Engine

from app.analytics import export
from app.analytics.event_files import ARROW_EVENT_SCHEMA
from app.analytics.export import STATE_FILE, ExportError, export_events, read_state
from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog

DAY_MS = 86_400_000
MONDAY = 1_767_571_200_000  # 2026-01-05T00:00:00Z
CONTEXT = RequestContext("req-1", "192.0.2.7")


class SteppingClock:
    def __init__(self, now_ms: int) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now


@pytest.fixture
def engine(any_audit_db: str) -> Iterator[Engine]:
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def clock() -> SteppingClock:
    return SteppingClock(MONDAY + 9 * 3_600_000)


@pytest.fixture
def log(engine: Engine, clock: SteppingClock) -> SqlAuditLog:
    return SqlAuditLog(engine, service_id="kts-0", clock=clock)


def created(owner: str = "User:alice", *, outcome: Outcome = Outcome.SUCCEEDED) -> AuditEvent:
    return AuditEvent(
        Action.TOKEN_CREATE,
        outcome,
        principal=owner,
        owner=owner,
        token_requester=owner,
        token_id=f"T-{owner}",
        details={"requestedMaxLifetimeMs": -1, "renewers": []},
    )


def read_back(out: Path) -> list[dict[str, object]]:
    dataset = ds.dataset(out, format="parquet", partitioning="hive")
    return sorted(dataset.to_table().to_pylist(), key=lambda row: row["id"])


def test_first_export_writes_every_settled_event_partitioned_by_utc_day(
    log: SqlAuditLog, clock: SteppingClock, tmp_path: Path
) -> None:
    first = log.append(created("User:alice"), CONTEXT)
    clock.now += DAY_MS  # Tuesday 09:00
    log.append(
        AuditEvent(Action.AUTHENTICATION, Outcome.DENIED, principal="User:mallory", details={"scheme": "basic"}),
        CONTEXT,
    )
    clock.now += 15 * 3_600_000 - 1  # Tuesday 23:59:59.999
    last = log.append(created("User:bob"), RequestContext())
    out = tmp_path / "events"

    result = export_events(log._engine, out, now_ms=clock.now + 10 * 60_000)

    assert (result.exported, result.first_id, result.last_id, result.held_back) == (3, first, last, 0)
    assert result.dates == ["2026-01-05", "2026-01-06"]
    assert sorted(path.name for path in out.iterdir()) == [
        export.LOCK_FILE,
        STATE_FILE,
        "date=2026-01-05",
        "date=2026-01-06",
    ]
    for partition in ("date=2026-01-05", "date=2026-01-06"):
        (only,) = (out / partition).iterdir()
        assert only.name == "part-00000000000000000001-000000.parquet"
    dataset = ds.dataset(out, format="parquet", partitioning="hive")
    assert dataset.schema.remove(dataset.schema.get_field_index("date")) == ARROW_EVENT_SCHEMA
    rows = read_back(out)
    assert [(row["id"], row["date"], row["action"], row["outcome"]) for row in rows] == [
        (first, "2026-01-05", "token.create", "succeeded"),
        (first + 1, "2026-01-06", "authentication", "denied"),
        (last, "2026-01-06", "token.create", "succeeded"),
    ]
    assert rows[0]["client_address"] == "192.0.2.7" and rows[0]["service_id"] == "kts-0"
    assert rows[2]["client_address"] is None and rows[2]["request_id"] is None
    assert json.loads(str(rows[0]["details"])) == {"requestedMaxLifetimeMs": -1, "renewers": []}
    state = json.loads((out / STATE_FILE).read_text(encoding="utf-8"))
    assert state == {"version": 1, "lastExportedId": last, "exportedEvents": 3, "updatedMs": clock.now + 10 * 60_000}


def test_a_second_run_adds_only_new_events(log: SqlAuditLog, clock: SteppingClock, tmp_path: Path) -> None:
    for owner in ("User:a", "User:b"):
        log.append(created(owner), CONTEXT)
    out = tmp_path / "events"
    assert export_events(log._engine, out, now_ms=clock.now + DAY_MS).exported == 2

    again = export_events(log._engine, out, now_ms=clock.now + DAY_MS)
    assert (again.exported, again.first_id, again.state.last_id) == (0, None, 2)

    clock.now += DAY_MS
    log.append(created("User:c"), CONTEXT)
    third = export_events(log._engine, out, now_ms=clock.now + 120_000)
    assert (third.exported, third.first_id, third.last_id, third.dates) == (1, 3, 3, ["2026-01-06"])
    assert (out / "date=2026-01-06" / "part-00000000000000000003-000000.parquet").is_file()
    assert [row["owner"] for row in read_back(out)] == ["User:a", "User:b", "User:c"]
    assert read_state(out) == export.ExportState(last_id=3, exported_events=3, updated_ms=clock.now + 120_000)


def test_a_pending_event_holds_back_itself_and_everything_after_it(
    log: SqlAuditLog, clock: SteppingClock, tmp_path: Path
) -> None:
    log.append(created("User:a"), CONTEXT)
    pending = log.append(created("User:b", outcome=Outcome.PENDING), CONTEXT)
    log.append(created("User:c"), CONTEXT)
    out = tmp_path / "events"

    held = export_events(log._engine, out, now_ms=clock.now + DAY_MS)
    assert (held.exported, held.state.last_id, held.held_back) == (1, pending - 1, 2)

    log.complete(pending, created("User:b"))  # settled as succeeded, in place
    settled = export_events(log._engine, out, now_ms=clock.now + DAY_MS)
    assert (settled.exported, settled.first_id, settled.last_id, settled.held_back) == (2, pending, pending + 1, 0)
    rows = read_back(out)
    assert [(row["owner"], row["outcome"]) for row in rows] == [
        ("User:a", "succeeded"),
        ("User:b", "succeeded"),
        ("User:c", "succeeded"),
    ]


def test_events_younger_than_the_settle_window_wait(log: SqlAuditLog, clock: SteppingClock, tmp_path: Path) -> None:
    log.append(created("User:a"), CONTEXT)
    clock.now += 30_000
    log.append(created("User:b"), CONTEXT)
    out = tmp_path / "events"

    early = export_events(log._engine, out, now_ms=clock.now + 1, settle_ms=60_000)
    assert (early.exported, early.held_back) == (0, 2)  # both younger than a minute
    later = export_events(log._engine, out, now_ms=clock.now - 30_000 + 60_001, settle_ms=60_000)
    assert (later.exported, later.last_id, later.held_back) == (1, 1, 1)  # the first one is old enough
    last = export_events(log._engine, out, now_ms=clock.now + 60_001, settle_ms=60_000)
    assert (last.exported, last.last_id, last.held_back) == (1, 2, 0)


def test_a_run_that_died_before_its_state_is_redone_without_duplicates(
    log: SqlAuditLog, clock: SteppingClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log.append(created("User:a"), CONTEXT)
    out = tmp_path / "events"
    export_events(log._engine, out, now_ms=clock.now + DAY_MS)
    for day in range(3):
        clock.now += DAY_MS
        log.append(created(f"User:day{day}"), CONTEXT)

    def crash(*_args: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patched:
        patched.setattr(export, "write_state", crash)
        with pytest.raises(OSError, match="disk full"):
            export_events(log._engine, out, now_ms=clock.now + DAY_MS, chunk_rows=2)
    assert read_state(out) is not None and read_state(out).last_id == 1  # type: ignore[union-attr]
    (out / "date=2026-01-08" / ".part-00000000000000000002-000009.parquet.tmp").write_bytes(b"half a file")

    redone = export_events(log._engine, out, now_ms=clock.now + DAY_MS, chunk_rows=2)

    assert (redone.exported, redone.first_id, redone.last_id) == (3, 2, 4)
    assert [row["owner"] for row in read_back(out)] == ["User:a", "User:day0", "User:day1", "User:day2"]
    assert not list(out.glob("date=*/.*"))


def test_a_directory_with_partitions_but_no_state_is_refused(log: SqlAuditLog, tmp_path: Path) -> None:
    (tmp_path / "date=2026-01-05").mkdir()
    with pytest.raises(ExportError, match=r"no _kts_export_state\.json"):
        export_events(log._engine, tmp_path, now_ms=MONDAY + DAY_MS)


@pytest.mark.parametrize(
    "content",
    ["not json", '{"version": 1}', '{"version": 2, "lastExportedId": 1, "exportedEvents": 1, "updatedMs": 0}'],
)
def test_a_damaged_state_file_is_refused(log: SqlAuditLog, tmp_path: Path, content: str) -> None:
    (tmp_path / STATE_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(ExportError, match=STATE_FILE):
        export_events(log._engine, tmp_path, now_ms=MONDAY + DAY_MS)


def test_two_exports_into_one_directory_do_not_run_at_once(log: SqlAuditLog, tmp_path: Path) -> None:
    with export._exclusive(tmp_path), pytest.raises(ExportError, match="another export"):
        export_events(log._engine, tmp_path, now_ms=MONDAY + DAY_MS)


def test_an_empty_table_writes_a_state_and_no_partition(log: SqlAuditLog, tmp_path: Path) -> None:
    result = export_events(log._engine, tmp_path, now_ms=MONDAY)
    assert (result.exported, result.state.last_id, result.dates) == (0, 0, [])
    assert read_state(tmp_path) == export.ExportState(0, 0, MONDAY)
    assert list(tmp_path.glob("date=*")) == []
