"""The session: the local JVM's options, and shuffle partitions sized to the events unless the user chose them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from app.analytics.session import LOCAL_JVM, SHUFFLE_PARTITIONS, size_shuffles


@pytest.fixture
def restored(spark: SparkSession) -> Iterator[SparkSession]:
    before = spark.conf.get(SHUFFLE_PARTITIONS)
    yield spark
    spark.conf.set(SHUFFLE_PARTITIONS, before)


@pytest.mark.parametrize(
    ("rows", "partitions"),
    [(0, 2), (1, 2), (1_000_000, 2), (2_000_001, 4), (9_000_000, 10), (100_000_000, 100)],
)
def test_partitions_follow_the_rows_in_rounds_of_cores(restored: SparkSession, rows: int, partitions: int) -> None:
    assert restored.sparkContext.defaultParallelism == 2  # local[2]

    assert size_shuffles(restored, rows, rows_per_partition=1_000_000) == partitions
    assert restored.conf.get(SHUFFLE_PARTITIONS) == str(partitions)


def test_a_local_driver_jvm_runs_with_the_local_options(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    arguments = set(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())

    assert set(LOCAL_JVM["spark.driver.defaultJavaOptions"].split()) <= arguments
