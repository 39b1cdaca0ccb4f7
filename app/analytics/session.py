"""The report's Spark session, and where the JVM's own output goes.

Locally (``local[N]`` or ``spark://`` from a plain ``python`` process) this process starts the driver JVM.
Its output (the JVM's start-up notices, Spark's warnings) goes to a log file unless ``verbose``: the JVM
inherits this process's standard output and error when it starts, so both are pointed at the file for
that moment. Under ``spark-submit`` (``master`` None) the JVM is already running and its output is
spark-submit's.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkConf
from pyspark.sql import SparkSession

JDBC_JARS = (Path("/usr/share/java/postgresql.jar"), Path("/usr/share/java/sqlite-jdbc.jar"))
"""Debian's ``libpostgresql-jdbc-java`` and ``libxerial-sqlite-jdbc-java``; added when installed."""
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_THROUGHPUT_GC = "-XX:+UseParallelGC"
_LEAN_JIT = "-XX:MaxInlineLevel=6 -XX:InlineSmallCode=500 -XX:FreqInlineSize=100"
LOCAL_JVM = {
    # In local mode the driver JVM runs the tasks too, and a report is a batch job: the throughput collector,
    # its young collections on both cores and its heap free to grow to the maximum, cut the report at 10
    # million events from 66.5 to 57.3 s and the one-scan ceiling from 25.8 to 24.2 s, for a peak of 1.41 GiB
    # resident against 0.89 GiB with the serial collector kept small by free-heap ratios (5/20), which it used
    # before (bench/audit_report.py, one run each on a quiet two-core machine). Those ratios cost the throughput
    # collector more than they saved (70.9 s, 1.09 GiB); the serial collector without them took 60.3 s and
    # 1.21 GiB. The default 1 GiB heap still completes 10 million events; 32 MiB Parquet row groups keep each
    # writing task's buffer small.
    # The JIT: every query of the report loads Catalyst's rules and new generated classes, each run briefly,
    # so with the JVM's defaults its compiler threads took 29-31 s of the report's 117-122 s of CPU at 10
    # million events (C2 24-26 s), on two cores shared with the tasks. Shallower inlining (these three limits
    # well under the defaults 15, 2500 and 325 bytecodes) halves each C2 compilation: C2 took 12.6 s and the
    # report 109 s, the tasks' own code as fast as before (68 s against 67-69 s) and the one-scan ceiling
    # unchanged (bench/audit_report.py's CPU figures). Raising the compile thresholds as well
    # (CompileThresholdScaling=3) cut C2 to 10 s but made the tasks some 4 s slower, a cost that grows with
    # the events; compiling with C1 alone (TieredStopAtLevel=1) made them slower than it saved. (These figures
    # were measured with the serial collector.)
    "spark.driver.defaultJavaOptions": f"{_THROUGHPUT_GC} {_LEAN_JIT}",
    "spark.hadoop.parquet.block.size": str(32 * 2**20),
}


class JvmLog:
    """A file for the driver JVM's output; removed by ``discard`` after a run that needs no post-mortem."""

    def __init__(self) -> None:
        descriptor, name = tempfile.mkstemp(prefix="kts-spark-", suffix=".log")
        os.close(descriptor)
        self.path = Path(name)

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``path`` (so that a child started now inherits them), then back."""
    with path.open("ab") as log:
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for descriptor in saved:
                os.close(descriptor)


def build_session(
    master: str | None, *, app_name: str = "kts-audit-report", jvm_log: JvmLog | None = None
) -> SparkSession:
    """A session for the report. ``master`` None leaves it to ``spark-submit`` or ``spark-defaults.conf``.
    A JVM this process starts writes to ``jvm_log`` (None: to this terminal). Local masters get no web UI
    and ``LOCAL_JVM`` (unless configured otherwise); Debian's JDBC jars join ``spark.jars``; Spark logs
    warnings and worse."""
    conf = SparkConf().setAppName(app_name)
    conf.set("spark.sql.session.timeZone", "UTC").set("spark.ui.showConsoleProgress", "false")
    jars = [str(jar) for jar in JDBC_JARS if jar.is_file()]
    if master is None:
        # Under spark-submit the JVM is up and its conf may hold --jars, which spark.jars must keep.
        jars = [jar for jar in SparkConf().get("spark.jars", "").split(",") if jar] + jars
    else:
        conf.setMaster(master)
        if master.startswith("local"):
            # A host name resolving to loopback makes Spark warn and guess an interface; local needs none.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            os.environ.setdefault("MALLOC_ARENA_MAX", "2")  # glibc's per-thread arenas bloat a JVM's memory
            conf.set("spark.ui.enabled", "false")
            for key, value in LOCAL_JVM.items():
                conf.setIfMissing(key, value)
    if jars:
        conf.set("spark.jars", ",".join(dict.fromkeys(jars)))
    builder = SparkSession.builder.config(conf=conf)
    if jvm_log is None or SparkSession.getActiveSession() is not None:
        spark = builder.getOrCreate()
    else:
        with _output_to(jvm_log.path):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def size_shuffles(spark: SparkSession, rows: int, *, rows_per_partition: int) -> int:
    """Set the shuffle partitions for ``rows`` rows (at least one per core, rounded up to whole rounds of
    cores) unless the user configured them; adaptive execution still merges partitions that come out
    small. Returns the number in force."""
    if spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS):
        return int(spark.conf.get(SHUFFLE_PARTITIONS) or 0)
    cores = max(1, spark.sparkContext.defaultParallelism)
    wanted = max(1, -(-rows // rows_per_partition))
    partitions = -(-wanted // cores) * cores
    spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    return partitions
