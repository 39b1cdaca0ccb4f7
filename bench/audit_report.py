"""The audit report over synthetic events, against a ceiling measured in the same run. Prints one JSON document.

    python -m bench.audit_report [--events 10000000] [--days 30] [--seed 0] [--master local[2]]
                                 [--driver-memory 2g] [--input DIR] [--work-dir DIR] [--event-log DIR]
    python -m bench.audit_report --ceiling-only --input DIR [--master local[2]]

Phases: ``synthesize`` (``bench.audit_synth`` in a child process, so its memory is measured apart),
``spark_session`` (JVM start), ``report`` (``read_events`` + ``run_report``: every table and report.html),
then ``ceiling``: one full scan of the same Parquet (every column read) with one group-by (by token id,
the report's widest key), written nowhere (Spark's ``noop`` sink). ``ratio`` is report / ceiling: how many
such scans the whole report costs.

The ceiling runs in a child process of its own (``--ceiling-only``: a fresh Python and Spark JVM, the same
session builder, master, settings and input), so that each side pays the same fresh JVM: most of a cold
JVM's first minute of CPU is JIT compilation, which a ceiling run after the report, on its warm JVM, would
not pay. As for the report, only the query is timed, not the session's start. The ceiling on the report's
warm JVM is printed beside it (``ceiling_warm`` and ``report_over_ceiling_warm``), for comparison.

``cpu_seconds`` and ``report_over_ceiling_cpu``: the same phases in CPU time of the driver JVM (the
executors' work in local mode, with its JIT and GC threads; for the ceiling, the child's JVM). On a machine
other work keeps busy the wall times also count the waits for a core, and the two phases need not wait
alike; the CPU time is the work.

Memory: the peak resident set of the Spark driver JVM (``VmHWM``; in local mode the executors run in it)
after the report, of this Python process (``ru_maxrss``: the driver side of the report), and of the
synthesis child. The driver heap is Spark's default (1 GiB) unless ``--driver-memory`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import functions as F

from app.analytics.job import run_report
from app.analytics.progress import PhaseLines
from app.analytics.session import JvmLog, build_session
from app.analytics.sources import read_events
from app.analytics.spark_internals import driver_jvm

MASTER = "local[2]"
START = "2026-01-05"  # fixed so that runs are comparable


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


def _peak_rss_mib(pid: int) -> float | None:
    """Peak resident memory of a live process (VmHWM in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key, _, rest = line.partition(":")
        if key == "VmHWM":
            return _mib(int(rest.split()[0]))
    return None


def _cpu_seconds(pid: int) -> float:
    """CPU time (user and system) a live process has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _size_mib(directory: Path) -> float:
    return round(sum(path.stat().st_size for path in directory.rglob("*.parquet")) / 2**20, 1)


def synthesize(events: int, days: int, seed: int, out: Path) -> dict[str, Any]:
    """The generator in a child process: its time and its own peak memory."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.audit_synth", "--events", str(events), "--days", str(days),
         "--seed", str(seed), "--start", START, "--out", str(out)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {
        "seconds": time.perf_counter() - started,
        "peak_mib": _mib(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss),
        "summary": done.stdout.strip(),
    }


def ceiling(spark: Any, input_dir: Path) -> float:
    """Seconds for one full scan of every column with one group-by, computed and thrown away."""
    events = read_events(spark, input_dir=input_dir)
    strings = [name for name, kind in events.dtypes if kind == "string" and name != "token_id"]
    numbers = [name for name, kind in events.dtypes if kind != "string"]
    scan = events.groupBy("token_id").agg(
        F.count(F.lit(1)).alias("events"),
        *[F.max(F.length(name)).alias(name) for name in strings],
        *[F.max(name).alias(name) for name in numbers],
    )
    started = time.perf_counter()
    scan.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def ceiling_only(master: str, input_dir: Path) -> dict[str, float]:
    """The ceiling on a fresh session of this process's own (run as ``--ceiling-only``): the scan's seconds
    and its JVM's CPU seconds over the scan, the session's start excluded as it is for the report."""
    jvm_log = JvmLog()
    spark = build_session(master, app_name="kts-audit-report-bench-ceiling", jvm_log=jvm_log)
    try:
        jvm_pid, _ = driver_jvm(spark)
        cpu_started = _cpu_seconds(jvm_pid)
        seconds = ceiling(spark, input_dir)
        return {"seconds": seconds, "cpu_seconds": _cpu_seconds(jvm_pid) - cpu_started}
    finally:
        spark.stop()
        jvm_log.discard()


def fresh_ceiling(master: str, input_dir: Path) -> dict[str, float]:
    """``ceiling_only`` in a child process: stopping a session leaves its py4j JVM running (and warm) in the
    process that started it, so only a new process gets a cold one. The child inherits the environment,
    ``PYSPARK_SUBMIT_ARGS`` included, so its JVM is started like the report's."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.audit_report", "--ceiling-only", "--master", master, "--input", str(input_dir)],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def run(args: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    submit = [f"--driver-memory {args.driver_memory}"] if args.driver_memory else []
    if args.event_log:
        args.event_log.mkdir(parents=True, exist_ok=True)
        submit += [
            "--conf spark.eventLog.enabled=true",
            "--conf spark.eventLog.compress=false",
            f"--conf spark.eventLog.dir={args.event_log.resolve()}",
        ]
    if submit:
        os.environ.setdefault("PYSPARK_SUBMIT_ARGS", " ".join([*submit, "pyspark-shell"]))
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    input_dir, out_dir = args.input or work_dir / "events", work_dir / "report"
    synthesis: dict[str, Any] = {}
    if args.input is None:
        synthesis = synthesize(args.events, args.days, args.seed, input_dir)
        seconds["synthesize"] = synthesis.pop("seconds")

    jvm_log = JvmLog()
    progress = PhaseLines()
    started = time.perf_counter()
    spark = build_session(args.master, app_name="kts-audit-report-bench", jvm_log=jvm_log)
    seconds["spark_session"] = time.perf_counter() - started
    try:
        jvm_pid, jvm_heap_max = driver_jvm(spark)
        progress(f"Spark {spark.version} ready on {spark.sparkContext.master}")
        started, cpu_started = time.perf_counter(), _cpu_seconds(jvm_pid)
        summary = run_report(spark, read_events(spark, input_dir=input_dir), out_dir, progress=progress)
        seconds["report"] = time.perf_counter() - started
        cpu["report"] = _cpu_seconds(jvm_pid) - cpu_started
        jvm_peak = _peak_rss_mib(jvm_pid)
        python_peak = _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        cpu_started = _cpu_seconds(jvm_pid)
        seconds["ceiling_warm"] = ceiling(spark, input_dir)
        cpu["ceiling_warm"] = _cpu_seconds(jvm_pid) - cpu_started
        progress(f"ceiling on the report's warm JVM (one scan, one group-by): {seconds['ceiling_warm']:.1f} s")
    finally:
        spark.stop()
        jvm_log.discard()
    # After the report's session is stopped, so that the two JVMs never compete for the cores and memory.
    fresh = fresh_ceiling(args.master, input_dir)
    seconds["ceiling"], cpu["ceiling"] = fresh["seconds"], fresh["cpu_seconds"]
    progress(f"ceiling on a fresh JVM (one scan, one group-by): {seconds['ceiling']:.1f} s")

    return {
        "benchmark": "audit_report",
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_average": [round(value, 2) for value in os.getloadavg()],
        "cpus": os.cpu_count(),
        "master": args.master,
        "spark_submit_args": os.environ.get("PYSPARK_SUBMIT_ARGS", "(none: the default 1 GiB driver heap)"),
        "events": summary["events"],
        "input_parquet_mib": _size_mib(input_dir),
        "seconds": {name: round(value, 2) for name, value in seconds.items()},
        "report_over_ceiling": round(seconds["report"] / seconds["ceiling"], 2),
        "cpu_seconds": {name: round(value, 2) for name, value in cpu.items()},
        "report_over_ceiling_cpu": round(cpu["report"] / cpu["ceiling"], 2),
        "report_over_ceiling_warm": round(seconds["report"] / seconds["ceiling_warm"], 2),
        "report_over_ceiling_warm_cpu": round(cpu["report"] / cpu["ceiling_warm"], 2),
        "report_events_per_second": round(summary["events"] / seconds["report"]),
        "peak_memory_mib": {
            "driver_jvm": jvm_peak,
            "driver_jvm_heap_max": round(jvm_heap_max / 2**20, 1),
            "python_driver": python_peak,
            "synthesis_child": synthesis.get("peak_mib"),
        },
        "synthesis": synthesis.get("summary"),
        "report_summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--master", default=MASTER, help=f"Spark master (default {MASTER})")
    parser.add_argument("--driver-memory", help="the Spark driver JVM's heap (default: Spark's, 1 GiB)")
    parser.add_argument("--input", type=Path, help="events already synthesized (skips the synthesis)")
    parser.add_argument(
        "--event-log", type=Path, metavar="DIR", help="write Spark's event log here (read it with bench.spark_profile)"
    )
    parser.add_argument("--work-dir", type=Path, help="keep the events and the report here (default: a temp dir)")
    parser.add_argument(
        "--ceiling-only", action="store_true", help="only the ceiling over --input, on this process's own JVM"
    )
    args = parser.parse_args()
    if args.ceiling_only:
        if args.input is None:
            parser.error("--ceiling-only needs --input")
        print(json.dumps(ceiling_only(args.master, args.input)))
        return
    if args.work_dir is not None:
        if args.work_dir.exists() and any(args.work_dir.iterdir()):
            parser.error(f"--work-dir {args.work_dir} is not empty")
        print(json.dumps(run(args, args.work_dir), indent=2))
        return
    work_dir = Path(tempfile.mkdtemp(prefix="kts-bench-audit-"))
    try:
        print(json.dumps(run(args, work_dir), indent=2))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
