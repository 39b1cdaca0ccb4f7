"""The canonical shape of an audit event for Spark, shared by the exporter, the synthesiser and the report.

``EVENT_SCHEMA`` mirrors the ``audit_events`` table (``app/storage/audit/tables.py``) column for column, with
the database's snake_case names. ``details`` stays JSON text exactly as stored; the transforms parse only
the fields they need.

The exported Parquet layout (what ``kts audit-export`` writes and ``read_events`` reads) is
``<dir>/date=YYYY-MM-DD/part-*.parquet``: the ``EVENT_SCHEMA`` columns plus the string partition column
``date``, the UTC calendar day of ``timestamp``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

EVENT_COLUMNS: tuple[str, ...] = (
    "id",
    "timestamp",
    "action",
    "outcome",
    "principal",
    "owner",
    "token_requester",
    "token_id",
    "error_code",
    "service_id",
    "request_id",
    "client_address",
    "details",
)
"""Column order of ``EVENT_SCHEMA``."""

EVENT_SCHEMA = StructType(
    [
        StructField("id", LongType(), nullable=False),
        StructField("timestamp", LongType(), nullable=False),  # ms since the epoch, UTC
        StructField("action", StringType(), nullable=False),
        StructField("outcome", StringType(), nullable=False),
        StructField("principal", StringType(), nullable=True),
        StructField("owner", StringType(), nullable=True),
        StructField("token_requester", StringType(), nullable=True),
        StructField("token_id", StringType(), nullable=True),
        StructField("error_code", IntegerType(), nullable=True),  # Kafka error code for denied/failed
        StructField("service_id", StringType(), nullable=False),
        StructField("request_id", StringType(), nullable=True),
        StructField("client_address", StringType(), nullable=True),
        StructField("details", StringType(), nullable=False),  # JSON object text, "{}" when empty
    ]
)

PARTITION_COLUMN = "date"
"""The Parquet partition column: ``YYYY-MM-DD``, the UTC day of ``timestamp``."""

PARQUET_SCHEMA = StructType([*EVENT_SCHEMA.fields, StructField(PARTITION_COLUMN, StringType(), nullable=False)])
"""``EVENT_SCHEMA`` plus the partition column, as the exported Parquet directory reads back."""


def partition_date(timestamp_ms: int) -> str:
    """The ``date`` partition value of an event: its UTC calendar day, ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def partition_date_column(timestamp: str = "timestamp") -> Column:
    """The ``date`` partition value as a Spark column; independent of the session time zone."""
    return F.date_from_unix_date(F.floor(F.col(timestamp) / 86_400_000).cast("int")).cast("string")
