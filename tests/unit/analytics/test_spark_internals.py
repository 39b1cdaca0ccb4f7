"""pyspark's private API, as ``app/analytics/spark_internals.py`` uses it, against the installed pyspark: if
one of these fails after an upgrade, the adapter needs a change before the version bound in pyproject.toml
may move."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pyspark.java_gateway
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from app.analytics import spark_internals


def test_write_text_goes_through_the_hadoop_file_system(spark: SparkSession, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.html"

    spark_internals.write_text(spark, target.as_uri(), "first")
    spark_internals.write_text(spark, target.as_uri(), "<p>Grüße</p>")  # replaces

    assert target.read_text(encoding="utf-8") == "<p>Grüße</p>"


def test_driver_jvm_names_the_java_process_and_its_heap(spark: SparkSession) -> None:
    pid, heap_bytes = spark_internals.driver_jvm(spark)

    assert pid != os.getpid()
    assert b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert heap_bytes > 64 * 2**20


def test_java_root_cause_finds_the_jdbc_drivers_reason(spark: SparkSession) -> None:
    with pytest.raises(AnalysisException) as raised:
        spark.read.jdbc("jdbc:sqlite:/nonexistent/kts/audit.db", "events", properties={"driver": "org.sqlite.JDBC"})

    assert "/nonexistent" not in str(raised.value)  # what Spark says hides the reason
    cause = spark_internals.java_root_cause(raised.value)
    assert cause is not None and "/nonexistent" in cause and "does not exist" in cause
    assert spark_internals.java_root_cause(ValueError("plain Python")) is None


def test_spark_submit_is_recognised_by_its_gateway_port(monkeypatch: pytest.MonkeyPatch) -> None:
    # PySpark joins the JVM that started it through this variable rather than launching its own.
    assert '"PYSPARK_GATEWAY_PORT" in os.environ' in inspect.getsource(pyspark.java_gateway)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert not spark_internals.launched_by_spark_submit()
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")
    assert spark_internals.launched_by_spark_submit()
