"""Writing audit events as Parquet files in the exported layout, with pyarrow (no Spark, no JVM).

The layout: ``<dir>/date=YYYY-MM-DD/<name>.parquet`` holding the ``EVENT_FIELDS`` columns, the ``date``
being the UTC day of ``timestamp``. The exporter and the synthesiser write through here, so both produce
exactly what ``job.read_events`` reads (with ``events_schema``'s Spark schema).

Every file appears whole or not at all: it is written under a dot-name (which Spark's and pyarrow's
readers skip) and renamed into place. Files whose names begin with ``_`` or ``.`` in the root (state,
lock) are skipped by the readers too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from app.domain.audit import EVENT_FIELDS, FieldType

PARTITION_COLUMN = "date"  # YYYY-MM-DD, the UTC day of the event's timestamp
MS_PER_DAY = 86_400_000
_ARROW_TYPES: dict[FieldType, pa.DataType] = {
    FieldType.SERIAL: pa.int64(),
    FieldType.INT64: pa.int64(),
    FieldType.INT32: pa.int32(),
    FieldType.STRING: pa.string(),
    FieldType.JSON_OBJECT: pa.string(),
}

ARROW_EVENT_SCHEMA = pa.schema(
    [pa.field(field.name, _ARROW_TYPES[field.type], nullable=field.nullable) for field in EVENT_FIELDS]
)
"""``EVENT_FIELDS`` as a pyarrow schema: the columns of every event Parquet file."""


def partition_dates(timestamps: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The ``date`` partition values (``YYYY-MM-DD``, UTC) of millisecond timestamps, vectorised."""
    days = pc.floor(pc.divide(pc.cast(timestamps, pa.float64()), MS_PER_DAY))
    return pc.cast(pc.cast(pc.cast(days, pa.int32()), pa.date32()), pa.string())


def write_partitioned(events: pa.Table, out_dir: Path, file_name: str) -> list[str]:
    """Write ``events`` (``ARROW_EVENT_SCHEMA`` columns) as one file named ``file_name`` in each date
    partition they touch; returns those dates in order. Rows keep their order within a partition."""
    if events.num_rows == 0:
        return []
    events = events.select(ARROW_EVENT_SCHEMA.names).cast(ARROW_EVENT_SCHEMA)
    dates = partition_dates(events.column("timestamp"))
    # A stable sort groups the rows by day and keeps their order (by id, by time) within each day.
    order = pc.sort_indices(dates)
    events, dates = events.take(order), pc.take(dates, order)
    written: list[str] = []
    start = 0
    for run in pc.value_counts(dates).to_pylist():
        date, count = run["values"], run["counts"]
        write_file(events.slice(start, count), out_dir / f"{PARTITION_COLUMN}={date}" / file_name)
        written.append(date)
        start += count
    return written


def write_file(table: pa.Table, path: Path) -> None:
    """Write one Parquet file atomically: a dot-named temporary file, flushed, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, temporary, compression="zstd")
    with temporary.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def partition_dirs(out_dir: Path) -> Iterable[Path]:
    """The ``date=...`` directories under ``out_dir``."""
    return sorted(path for path in out_dir.glob(f"{PARTITION_COLUMN}=*") if path.is_dir())
