"""Reading ``details`` fields with a regular expression gives what a JSON parser gives, for every shape the
service writes and for values crafted to fool it: keys inside strings, escaped quotes, negative numbers,
fractions, exponents, longs past 64 bits, booleans and what only looks like them, absent keys."""

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
    # keys inside strings, with and without the member's comma, spaces and escaped quotes around them
    {"note": ',"expiryTimestamp":3,"deleted":true', "expiryTimestamp": 4},
    {"note": '{"expiryTimestamp": 3, "deleted": false}', "reason": 'x" , "attempts" : 8'},
    {"a": "\\", "b": '\\","expiryTimestamp": 5', "c": 'he said "maxTimestamp": 6'},
    {'expiryTimestamp"': 7, "attempts": '"attempts":9'},
    {"note": 'tab\t"expiryTimestamp":\n1', "issueTimestamp": 11},
    # numbers: negative, zero, the bounds of a long and past them, fractions, exponents
    {"expiryTimestamp": -42, "issueTimestamp": 0, "maxTimestamp": -0, "attempts": -1},
    {"expiryTimestamp": -(2**63), "issueTimestamp": -(2**63) - 1, "maxTimestamp": 2**64, "attempts": 10**30},
    {"expiryTimestamp": 1.0, "issueTimestamp": -0.0, "maxTimestamp": 100000.0, "attempts": 0.5},
    {"expiryTimestamp": 1e20, "issueTimestamp": 1.5e-07, "maxTimestamp": -1.2345678901234567e300},
    {"requestedMaxLifetimeMs": 12345678901234567890123.5, "expiryTimestamp": 9_223_372_036_854_775_807},
    # booleans and what only looks like them
    {"deleted": False, "attempts": True, "expiryTimestamp": False},
    {"deleted": "false", "expiryTimestamp": "-5", "attempts": [1, 2]},
    {"deleted": [True], "expiryTimestamp": [7], "renewers": ["User:a", "expiryTimestamp"]},
    # absent keys, and names that only contain or extend the field's name
    {"expiryTimestampMs": 1, "maxTimestamps": 2, "xdeleted": True, "attemptsTotal": 3},
    {"renewers": [], "reason": ""},
]
FIELDS = ("expiryTimestamp", "issueTimestamp", "maxTimestamp", "requestedMaxLifetimeMs", "attempts", "deleted")


def expected(details: dict[str, Any], field: str) -> Any:
    value = details.get(field)
    if field == "deleted":
        return value if isinstance(value, bool) else None
    is_long = isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    return value if is_long else None


DUMPS = [
    lambda value: json.dumps(value, sort_keys=True, ensure_ascii=False),  # what the sink writes
    lambda value: json.dumps(value, separators=(",", ":")),
    lambda value: json.dumps(value, indent=2),
    lambda value: json.dumps(value, indent="\t", separators=(" , ", " :\r\n ")),
]


def read(spark: SparkSession, details: list[Any], dumps: Any) -> dict[int, dict[str, Any]]:
    """Every field of every details, as ``details_number``/``details_flag`` read them, by index."""
    frame = spark.createDataFrame(
        [(index, dumps(value)) for index, value in enumerate(details)], "i int, details string"
    )
    columns = [(t.details_flag(f) if f == "deleted" else t.details_number(f)).alias(f) for f in FIELDS]
    return {row["i"]: {f: row[f] for f in FIELDS} for row in frame.select("i", *columns).collect()}


@pytest.mark.parametrize("dumps", DUMPS, ids=["sink", "compact", "indent", "odd-spacing"])
def test_fields_read_as_a_json_parser_reads_them(spark: SparkSession, dumps: Any) -> None:
    found = read(spark, DETAILS, dumps)

    for index, value in enumerate(DETAILS):
        assert found[index] == {f: expected(value, f) for f in FIELDS}, value


def test_text_that_is_not_json_reads_as_nulls(spark: SparkSession) -> None:
    frame = spark.createDataFrame([("not json",), ("",), (None,)], "details string")

    rows = frame.select(t.details_number("expiryTimestamp").alias("e"), t.details_flag("deleted").alias("d")).collect()

    assert [(row["e"], row["d"]) for row in rows] == [(None, None)] * 3
