"""The page's numbers come back from one query as tagged JSON rows, sorted on the driver: the driver's sort
must be Spark's (nulls first ascending, last descending, ties broken by the later keys), and the JSON must
give back every value as Spark had it (nulls, longs past 2**53, doubles, text that needs escaping)."""

from __future__ import annotations

import random

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from app.analytics.report_data import _all_rows, _ordered

SCHEMA = "a long, b string, c double"
ODD = 'quote " backslash \\ newline \n tab \t ünïcode 🙂'


def test_rows_sort_on_the_driver_as_spark_orders_them(spark: SparkSession) -> None:
    generator = random.Random(7)
    rows = [
        (
            generator.choice([None, -(2**62), -1, 0, 1, 2**53 + 1]),
            generator.choice([None, "", "a", "B", "b", "ä", ODD]),
            generator.choice([None, -1.5, 0.0, 0.1, 1e300]),
        )
        for _ in range(300)
    ]
    frame = spark.createDataFrame(rows, SCHEMA)
    orders = [("a", "-b", "c"), ("-a", "b", "-c"), ("-c", "-a", "b"), ("b", "c", "a")]

    found = _all_rows({"all": frame})["all"]

    for order in orders:
        columns = [F.desc(name[1:]) if name.startswith("-") else F.asc(name) for name in order]
        expected = [row.asDict() for row in frame.orderBy(*columns).collect()]
        assert _ordered(found, *order) == expected, order


def test_frames_of_different_columns_come_back_by_name_with_their_values(spark: SparkSession) -> None:
    numbers = spark.createDataFrame([(2**62 + 1, None, 0.1)], SCHEMA)
    texts = spark.createDataFrame([(ODD, None)], "text string, missing long")
    empty = spark.createDataFrame([], SCHEMA)

    found = _all_rows({"numbers": numbers, "texts": texts, "empty": empty})

    assert found == {
        "numbers": [{"a": 2**62 + 1, "b": None, "c": 0.1}],
        "texts": [{"text": ODD, "missing": None}],
        "empty": [],
    }
