"""Event Parquet files: the schema mirrors EVENT_SCHEMA, dates are UTC days, rows keep their order per day."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from app.analytics.event_files import ARROW_EVENT_SCHEMA, partition_dates, write_partitioned
from app.analytics.events_schema import EVENT_SCHEMA, partition_date


def test_the_arrow_schema_mirrors_event_schema() -> None:
    assert ARROW_EVENT_SCHEMA.names == EVENT_SCHEMA.fieldNames()
    assert [field.nullable for field in ARROW_EVENT_SCHEMA] == [field.nullable for field in EVENT_SCHEMA.fields]
    assert ARROW_EVENT_SCHEMA.field("error_code").type == pa.int32()
    assert ARROW_EVENT_SCHEMA.field("timestamp").type == pa.int64()


def test_partition_dates_are_utc_days_as_events_schema_computes_them() -> None:
    timestamps = [0, 86_399_999, 86_400_000, -1, 1_767_571_199_999, 1_767_571_200_000]
    dates = partition_dates(pa.array(timestamps, pa.int64())).to_pylist()
    assert dates == ["1970-01-01", "1970-01-01", "1970-01-02", "1969-12-31", "2026-01-04", "2026-01-05"]
    assert dates == [partition_date(timestamp) for timestamp in timestamps]


def _events(rows: list[tuple[int, int]]) -> pa.Table:
    columns = {name: [None] * len(rows) for name in ARROW_EVENT_SCHEMA.names}
    columns["id"] = [event_id for event_id, _ in rows]
    columns["timestamp"] = [timestamp for _, timestamp in rows]
    columns["action"] = columns["outcome"] = columns["service_id"] = ["x"] * len(rows)
    columns["details"] = ["{}"] * len(rows)
    return pa.table(columns, schema=ARROW_EVENT_SCHEMA)


def test_one_file_per_day_rows_in_their_order_and_no_temporary_file_left(tmp_path: Path) -> None:
    day = 86_400_000
    events = _events([(1, 5 * day + 10), (2, 4 * day), (3, 5 * day + 5), (4, 4 * day + 1), (5, 6 * day)])

    assert write_partitioned(events, tmp_path, "part-a.parquet") == ["1970-01-05", "1970-01-06", "1970-01-07"]

    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == [
        "date=1970-01-05",
        "date=1970-01-05/part-a.parquet",
        "date=1970-01-06",
        "date=1970-01-06/part-a.parquet",
        "date=1970-01-07",
        "date=1970-01-07/part-a.parquet",
    ]
    table = ds.dataset(tmp_path / "date=1970-01-06", format="parquet").to_table()
    assert table.schema == ARROW_EVENT_SCHEMA
    assert table.column("id").to_pylist() == [1, 3]  # the order given, not sorted by time
    assert write_partitioned(events.slice(0, 0), tmp_path, "part-b.parquet") == []
