"""A PySpark job the Spark provider's tests run in a process of its own (one SparkSession, one JVM, its own log):
``python spark_kafka_job.py <plan.json>``.

The plan gives the Spark configuration (no Kafka password in it: the kts provider puts tokens in the job's
credentials) and the topics. The job

1. batch: reads ``batch_in`` and writes its records to ``batch_out``, then reads ``batch_out`` back;
2. streaming: reads ``stream`` with a one-second trigger until ``stop_file`` appears, and for every micro-batch
   records which token (by id) the job's credentials held before and after its records were read: a batch read
   between two equal ids was read by consumers built with that token (Spark's Kafka source rebuilds a cached
   consumer whose login differs from the credentials' current token).

It writes one JSON object per line to ``events``: ``{"phase": "batch", ...}``, then ``{"phase": "micro-batch",
...}`` per micro-batch, and ``{"phase": "done"}`` at the end (``{"phase": "failed", "error": ...}`` on failure).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from pyspark import SparkConf
from pyspark.sql import DataFrame, SparkSession


def main(plan_path: str) -> int:
    plan = json.loads(Path(plan_path).read_text())
    events = Path(plan["events"]).open("a", buffering=1)

    def emit(**event: Any) -> None:
        events.write(json.dumps({"at": time.time(), **event}) + "\n")

    if plan.get("submit_args"):
        os.environ["PYSPARK_SUBMIT_ARGS"] = plan["submit_args"]  # spark-submit's own options (--proxy-user)
    try:
        conf = SparkConf()
        for key, value in plan["conf"].items():
            conf.set(key, value)
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
        spark.sparkContext.setLogLevel(plan.get("log_level", "WARN"))
        try:
            emit(phase="started", conf=dict(spark.sparkContext.getConf().getAll()))
            if plan.get("batch_in"):
                batch(spark, plan, emit)
            if plan.get("stream"):
                stream(spark, plan, emit)
        finally:
            spark.stop()
        emit(phase="done")
        return 0
    except Exception as exc:  # the test reads the failure from the events
        emit(phase="failed", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc())
        return 1


def token_id(spark: SparkSession, cluster: str) -> str | None:
    """The id of the token the job's credentials hold for ``cluster`` (what Spark's Kafka connector logs in with)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    credentials = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser().getCredentials()
    token = credentials.getToken(jvm.org.apache.hadoop.io.Text(f"kafka.server.delegation.token.{cluster}"))
    return None if token is None else bytes(token.getIdentifier()).decode()


def reader(spark: SparkSession, plan: dict[str, Any], bootstrap: str, topic: str, streaming: bool) -> DataFrame:
    source = spark.readStream if streaming else spark.read
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    options.update(plan.get("client_options", {}))
    return source.format("kafka").options(**options).load()  # type: ignore[no-any-return]


def batch(spark: SparkSession, plan: dict[str, Any], emit: Any) -> None:
    bootstrap = plan["batch_bootstrap"]
    started = time.monotonic()
    records = reader(spark, plan, bootstrap, plan["batch_in"], False).selectExpr("key", "value")
    written = records.count()
    (
        records.write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", plan["batch_out"])
        .options(**plan.get("client_options", {}))
        .save()
    )
    back = reader(spark, plan, bootstrap, plan["batch_out"], False).selectExpr("CAST(value AS STRING) AS v")
    values = sorted(row.v for row in back.collect())
    emit(
        phase="batch",
        read=written,
        values=values,
        token=token_id(spark, plan["batch_cluster"]),
        seconds=round(time.monotonic() - started, 3),
    )


def stream(spark: SparkSession, plan: dict[str, Any], emit: Any) -> None:
    cluster = plan["stream_cluster"]
    stop_file = Path(plan["stop_file"])
    source = reader(spark, plan, plan["stream_bootstrap"], plan["stream"], True)

    def each(frame: DataFrame, batch_id: int) -> None:
        before = token_id(spark, cluster)
        values = [row.v for row in frame.selectExpr("CAST(value AS STRING) AS v").collect()]
        emit(phase="micro-batch", batch=batch_id, before=before, after=token_id(spark, cluster), values=values)

    query = source.writeStream.foreachBatch(each).trigger(processingTime="1 second").start()
    try:
        deadline = time.monotonic() + plan.get("stream_timeout_s", 600)
        while not stop_file.exists() and time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {query.exception()}")
            time.sleep(0.2)
    finally:
        query.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
