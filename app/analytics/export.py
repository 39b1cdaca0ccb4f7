"""Incremental export of the audit table to date-partitioned Parquet (``kts audit-export``).

SQLAlchemy reads the table (the same engine and URL syntax as ``kts serve``) and pyarrow writes the files,
so an export needs no JVM: a weekly run that adds a few thousand rows takes a second, not a Spark start-up.
Rows are streamed in chunks, so the first export of a large table holds one chunk at a time.

Which events are exported: only settled ones, and only those no earlier event can still appear below.
A run exports ids above the last exported id up to the *export bound*: the highest id whose event is older
than the settle window (default 60 s, the audit reconciler's grace), and below the lowest id still
``pending``. Why both:

- a pending event is completed in place later (``succeeded``/``failed``), so exporting it would freeze a
  state that changes; everything from the first pending id on waits for the next run (the reconciler
  settles abandoned pending events after its grace, so the wait is bounded while a service runs);
- on PostgreSQL ids come from a sequence, so a transaction can commit id 100 after id 101 is visible.
  An event older than the window was written long enough ago that every id below it has committed (or
  rolled back), as long as no audit insert takes longer than the window and the clocks of the service and
  the exporter agree within it.

The state file ``_kts_export_state.json`` in the output directory holds the last exported id. It is
replaced atomically after the run's files are in place; a run that dies before that leaves files named
after its first id, which the next run deletes before it starts again. One run at a time: a lock file.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlalchemy import Connection, Engine, func, select

from app.analytics.event_files import ARROW_EVENT_SCHEMA, partition_dirs, write_partitioned
from app.domain.audit import Outcome
from app.storage.audit.database import translated_db_errors
from app.storage.audit.tables import audit_events as events

STATE_FILE = "_kts_export_state.json"  # "_" first: Parquet readers (Spark, pyarrow) skip it
LOCK_FILE = "_kts_export.lock"
STATE_VERSION = 1
SETTLE_MS = 60_000
CHUNK_ROWS = 100_000


class ExportError(Exception):
    """The output directory cannot take this export; the message is one line."""


@dataclass(frozen=True, slots=True)
class ExportState:
    last_id: int  # every event with an id up to this one is in the files (ids never reused)
    exported_events: int  # how many events all runs wrote
    updated_ms: int


@dataclass(frozen=True, slots=True)
class ExportResult:
    exported: int  # events written by this run
    first_id: int | None  # the smallest and largest id written, None when nothing was
    last_id: int | None
    state: ExportState
    held_back: int  # events above the bound (pending, or younger than the window), left for a later run
    dates: list[str]  # the date partitions this run wrote to


def export_events(
    engine: Engine,
    out_dir: Path,
    *,
    now_ms: int,
    settle_ms: int = SETTLE_MS,
    chunk_rows: int = CHUNK_ROWS,
) -> ExportResult:
    """Append the settled events not yet exported to ``out_dir``; see the module docstring for which."""
    if settle_ms < 0:
        raise ValueError("settle_ms must not be negative")
    out_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(out_dir):
        state = read_state(out_dir)
        if state is None:
            state = ExportState(last_id=0, exported_events=0, updated_ms=now_ms)
            if any(partition_dirs(out_dir)):
                raise ExportError(
                    f"{out_dir} holds date partitions but no {STATE_FILE}; export into an empty directory"
                )
        file_name = _run_file_prefix(state.last_id)
        _remove_unfinished_run(out_dir, file_name)
        with translated_db_errors(), _snapshot(engine) as connection:
            bound = export_bound(connection, after_id=state.last_id, cutoff_ms=now_ms - settle_ms)
            first_id = last_id = None
            exported = 0
            dates: set[str] = set()
            if bound > state.last_id:
                for number, chunk in enumerate(_chunks(connection, state.last_id, bound, chunk_rows)):
                    dates.update(write_partitioned(chunk, out_dir, f"{file_name}{number:06d}.parquet"))
                    ids = chunk.column("id")
                    first_id = ids[0].as_py() if first_id is None else first_id
                    last_id = ids[-1].as_py()
                    exported += chunk.num_rows
            held_back = connection.execute(
                select(func.count()).where(events.c.id > max(bound, state.last_id))
            ).scalar_one()
        new_state = ExportState(
            last_id=max(bound, state.last_id), exported_events=state.exported_events + exported, updated_ms=now_ms
        )
        if new_state.last_id != state.last_id or not (out_dir / STATE_FILE).exists():
            write_state(out_dir, new_state)
        return ExportResult(exported, first_id, last_id, new_state, int(held_back), sorted(dates))


def export_bound(connection: Connection, *, after_id: int, cutoff_ms: int) -> int:
    """The highest id this run may export (``after_id`` when none): the newest event older than
    ``cutoff_ms``, and below the first pending event."""
    newest_settled_in_time = connection.execute(
        select(events.c.id)
        .where(events.c.id > after_id, events.c.timestamp < cutoff_ms)
        .order_by(events.c.id.desc())
        .limit(1)
    ).scalar()
    if newest_settled_in_time is None:
        return after_id
    first_pending = connection.execute(
        select(func.min(events.c.id)).where(
            events.c.id > after_id, events.c.id <= newest_settled_in_time, events.c.outcome == Outcome.PENDING.value
        )
    ).scalar()
    return int(newest_settled_in_time) if first_pending is None else int(first_pending) - 1


def read_state(out_dir: Path) -> ExportState | None:
    """The state of earlier runs, None before the first; ExportError when the file is not ours or damaged."""
    path = out_dir / STATE_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ExportError(f"cannot read {path}: {exc}") from None
    try:
        if raw["version"] != STATE_VERSION:
            raise ExportError(f"{path} has version {raw['version']}, this kts writes {STATE_VERSION}")
        state = ExportState(int(raw["lastExportedId"]), int(raw["exportedEvents"]), int(raw["updatedMs"]))
    except (KeyError, TypeError, ValueError):
        raise ExportError(f"{path} is not a kts export state file") from None
    if state.last_id < 0 or state.exported_events < 0:
        raise ExportError(f"{path} is not a kts export state file")
    return state


def write_state(out_dir: Path, state: ExportState) -> None:
    """Replace the state file atomically (write, flush, rename, flush the directory)."""
    body = {
        "version": STATE_VERSION,
        "lastExportedId": state.last_id,
        "exportedEvents": state.exported_events,
        "updatedMs": state.updated_ms,
    }
    temporary = out_dir / f".{STATE_FILE}.tmp"
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(body, handle, indent=2)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, out_dir / STATE_FILE)
    _fsync_dir(out_dir)


def _run_file_prefix(last_id: int) -> str:
    """Files of a run are named after the first id it may write, so a rerun after a crash finds them."""
    return f"part-{last_id + 1:020d}-"


def _remove_unfinished_run(out_dir: Path, file_prefix: str) -> None:
    for partition in partition_dirs(out_dir):
        for leftover in [*partition.glob(f"{file_prefix}*.parquet"), *partition.glob(".*.tmp")]:
            leftover.unlink()


def _chunks(connection: Connection, after_id: int, up_to_id: int, chunk_rows: int) -> Iterator[pa.Table]:
    columns = [events.c[name] for name in ARROW_EVENT_SCHEMA.names]
    statement = select(*columns).where(events.c.id > after_id, events.c.id <= up_to_id).order_by(events.c.id)
    result = connection.execution_options(stream_results=True, yield_per=chunk_rows).execute(statement)
    for rows in result.partitions(chunk_rows):
        yield _table(rows)


def _table(rows: list[Any]) -> pa.Table:
    values = list(zip(*rows, strict=True))
    return pa.Table.from_arrays(
        [pa.array(values[index], type=field.type) for index, field in enumerate(ARROW_EVENT_SCHEMA)],
        schema=ARROW_EVENT_SCHEMA,
    )


@contextmanager
def _snapshot(engine: Engine) -> Iterator[Connection]:
    """One read transaction for the bound and the rows. PostgreSQL: REPEATABLE READ, so both see one
    snapshot. SQLite: one writer at a time assigns ids in commit order, and rows at or below the bound
    only ever change while pending, which they are not."""
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection = connection.execution_options(isolation_level="REPEATABLE READ")
        with connection.begin():
            yield connection


@contextmanager
def _exclusive(out_dir: Path) -> Iterator[None]:
    with (out_dir / LOCK_FILE).open("a") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ExportError(f"another export into {out_dir} is running") from None
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _fsync_dir(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
