"""Event Parquet files: the Arrow and Spark schemas are ``EVENT_FIELDS``, dates are UTC days (in pyarrow and
in Spark alike), rows keep their order per day."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from app.analytics.event_files import ARROW_EVENT_SCHEMA, partition_dates, write_partitioned
from app.analytics.events_schema import EVENT_SCHEMA, partition_date_column
from app.domain.audit import EVENT_FIELDS

TIMESTAMPS = [0, 86_399_999, 86_400_000, -1, 1_767_571_199_999, 1_767_571_200_000]
DATES = ["1970-01-01", "1970-01-01", "1970-01-02", "1969-12-31", "2026-01-04", "2026-01-05"]


def test_the_arrow_and_spark_schemas_are_the_event_fields() -> None:
    names = [field.name for field in EVENT_FIELDS]
    nullable = [field.nullable for field in EVENT_FIELDS]
    assert ARROW_EVENT_SCHEMA.names == EVENT_SCHEMA.fieldNames() == names
    assert [field.nullable for field in ARROW_EVENT_SCHEMA] == [field.nullable for field in EVENT_SCHEMA.fields]
    assert [field.nullable for field in ARROW_EVENT_SCHEMA] == nullable
    assert ARROW_EVENT_SCHEMA.field("error_code").type == pa.int32()
    assert ARROW_EVENT_SCHEMA.field("timestamp").type == pa.int64()
    assert ARROW_EVENT_SCHEMA.field("details").type == pa.string()
    assert EVENT_SCHEMA["id"].dataType.typeName() == "long"
    assert EVENT_SCHEMA["error_code"].dataType.typeName() == "integer"


def test_partition_dates_are_utc_days() -> None:
    assert partition_dates(pa.array(TIMESTAMPS, pa.int64())).to_pylist() == DATES


def test_spark_computes_the_same_partition_dates(spark: SparkSession) -> None:
    frame = spark.createDataFrame([(timestamp,) for timestamp in TIMESTAMPS], "timestamp long")
    found = frame.select(partition_date_column().alias("date"), F.col("timestamp")).collect()
    assert {row["timestamp"]: row["date"] for row in found} == dict(zip(TIMESTAMPS, DATES, strict=True))


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
