"""Every use of pyspark's private API, fenced in one place.

PySpark has no public way to reach the JVM's Hadoop file system or the Java cause of an error, and the
report needs both: ``report.html`` must land on ``hdfs://`` or ``s3a://`` like the tables do, and a
failed JDBC read must name the driver's reason (Spark's own message hides it). So this module uses
``SparkContext._jvm`` and ``._jsc`` (the py4j gateway and the JavaSparkContext) and
``CapturedException._origin`` (the Java throwable behind a Spark error). Only local mode and classic
(non-Connect) sessions have them. ``tests/unit/analytics/test_spark_internals.py`` exercises each one
against the installed pyspark and fails loudly if one changes; ``pyproject.toml`` bounds pyspark to the
minor tested there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_MAX_CAUSES = 20  # cause chains are short; a cycle must not hang us


def _jvm(spark: SparkSession) -> Any:
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("this Spark session has no JVM gateway (Spark Connect?)")
    return jvm


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``uri`` through the JVM's Hadoop file system, which knows every scheme the
    cluster is configured for; replaces an existing file."""
    path = _jvm(spark).org.apache.hadoop.fs.Path(uri)
    stream = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(path, True)
    try:
        stream.write(text.encode("utf-8"))
    finally:
        stream.close()


def driver_jvm(spark: SparkSession) -> tuple[int, int]:
    """The driver JVM's process id and maximum heap in bytes (for benchmarks)."""
    java = _jvm(spark).java.lang
    return int(java.ProcessHandle.current().pid()), int(java.Runtime.getRuntime().maxMemory())


def java_root_cause(error: BaseException) -> str | None:
    """The first line of the innermost Java cause behind a Spark or py4j error, None when there is none
    (or the JVM is already gone)."""
    throwable = getattr(error, "_origin", None) or getattr(error, "java_exception", None)
    try:
        root = None
        for _ in range(_MAX_CAUSES):
            if throwable is None:
                break
            root, throwable = throwable, throwable.getCause()
        message = root.getMessage() if root is not None else None
    except Exception:
        return None
    return str(message).strip().splitlines()[0] if message else None


def launched_by_spark_submit() -> bool:
    """True when the JVM started this Python process (spark-submit's launcher passes its gateway port);
    the master then comes from spark-submit."""
    return "PYSPARK_GATEWAY_PORT" in os.environ
