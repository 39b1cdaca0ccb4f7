"""The audit events as Spark reads them: ``EVENT_FIELDS`` as a Spark schema, and the exported Parquet layout.

``details`` stays JSON text exactly as stored; the transforms parse only the fields they need.

The exported Parquet layout (what ``kts audit-export`` writes and ``read_events`` reads) is
``<dir>/date=YYYY-MM-DD/part-*.parquet``: the ``EVENT_SCHEMA`` columns plus the string partition column
``date``, the UTC calendar day of ``timestamp``.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegerType, LongType, StringType, StructField, StructType

from app.analytics.event_files import MS_PER_DAY, PARTITION_COLUMN
from app.domain.audit import EVENT_FIELDS, FieldType

_SPARK_TYPES: dict[FieldType, DataType] = {
    FieldType.SERIAL: LongType(),
    FieldType.INT64: LongType(),
    FieldType.INT32: IntegerType(),
    FieldType.STRING: StringType(),
    FieldType.JSON_OBJECT: StringType(),
}

EVENT_SCHEMA = StructType(
    [StructField(field.name, _SPARK_TYPES[field.type], nullable=field.nullable) for field in EVENT_FIELDS]
)
EVENT_COLUMNS: tuple[str, ...] = tuple(EVENT_SCHEMA.fieldNames())

PARQUET_SCHEMA = StructType([*EVENT_SCHEMA.fields, StructField(PARTITION_COLUMN, StringType(), nullable=False)])
"""``EVENT_SCHEMA`` plus the partition column, as the exported Parquet directory reads back."""


def partition_date_column(timestamp: str = "timestamp") -> Column:
    """The ``date`` partition value as a Spark column; independent of the session time zone."""
    return F.date_from_unix_date(F.floor(F.col(timestamp) / MS_PER_DAY).cast("int")).cast("string")
