"""Reading ``details`` fields with a regular expression gives what a JSON parser gives, for every shape the
service writes and for values crafted to fool it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import SparkSession

from app.analytics import transforms as t

HOSTILE = 'x", "expiryTimestamp": 1, "deleted": true, "y": "\\\\"expiryTimestamp\\\\": 2'
DETAILS: list[Any] = [
    {"expiryTimestamp": 1_700_000_000_000, "renewTimePeriodMs": -1},
    {"requestedMaxLifetimeMs": -1, "issueTimestamp": 5, "expiryTimestamp": 6, "maxTimestamp": 7, "renewers": []},
    {"deleted": True, "expiryTimestamp": 3, "expiryTimePeriodMs": -1},
    {"deleted": False, "expiryTimestamp": 0},
    {"attempts": 12, "throttled": True},
    {"error": HOSTILE, "renewers": [HOSTILE], "reason": "expiryTimestamp: 9"},
    {"expiryTimestamp": 1.5, "attempts": "12", "deleted": "true"},  # not integers or booleans: null
    {"expiryTimestamp": 2**63, "attempts": 2**63 - 1},  # a long overflows, the largest long does not
    {"expiryTimestamp": None, "deleted": None},
    {"Grüße": "Ünïcode", "expiryTimestamp": 42},
    {},
]
FIELDS = ("expiryTimestamp", "issueTimestamp", "maxTimestamp", "requestedMaxLifetimeMs", "attempts", "deleted")


def expected(details: dict[str, Any], field: str) -> Any:
    value = details.get(field)
    if field == "deleted":
        return value if isinstance(value, bool) else None
    is_long = isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    return value if is_long else None


@pytest.mark.parametrize(
    "dumps",
    [
        lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False),  # what the sink writes
        lambda value: json.dumps(value, separators=(",", ":")),
        lambda value: json.dumps(value, indent=2),
    ],
)
def test_fields_read_as_a_json_parser_reads_them(spark: SparkSession, dumps: Any) -> None:
    texts = [(index, dumps(value)) for index, value in enumerate(DETAILS)]
    frame = spark.createDataFrame(texts, "i int, details string")
    columns = [t.details_flag(f).alias(f) if f == "deleted" else t.details_number(f).alias(f) for f in FIELDS]

    found = {row["i"]: row for row in frame.select("i", *columns).collect()}

    for index, details in enumerate(DETAILS):
        assert {field: found[index][field] for field in FIELDS} == {f: expected(details, f) for f in FIELDS}, details


def test_text_that_is_not_json_reads_as_nulls(spark: SparkSession) -> None:
    frame = spark.createDataFrame([("not json",), ("",), (None,)], "details string")

    rows = frame.select(t.details_number("expiryTimestamp").alias("e"), t.details_flag("deleted").alias("d")).collect()

    assert [(row["e"], row["d"]) for row in rows] == [(None, None)] * 3
