"""The audit report over synthetic events on ``local[2]``: seconds per phase and the driver's peak memory.
Prints one JSON document.

    python -m bench.audit_report [--events 10000000] [--days 30] [--seed 0] [--driver-memory 4g] [--work-dir DIR]

Phases: ``synthesize`` (``bench.audit_synth``, pyarrow, no Spark), ``spark_session`` (JVM
start), ``report`` (``read_events`` + ``run_report``: every figure table and report.html). Memory: the peak
resident set of this Python process (``ru_maxrss``: the generator and the report's collected aggregates)
and of the Spark driver JVM (``VmHWM`` in /proc; in local mode the executors run inside it). The JVM's heap
is ``--driver-memory`` (Spark's default of 1 GiB runs out caching 10 million events); it is passed through
``PYSPARK_SUBMIT_ARGS`` unless that is set already.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from app.analytics.job import build_session, read_events, run_report
from app.analytics.spark_internals import driver_jvm
from bench.audit_synth import synthesize

MASTER = "local[2]"
START_MS = 1_767_571_200_000  # 2026-01-05T00:00:00Z, fixed so that runs are comparable


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


def _jvm_status(pid: int) -> dict[str, float]:
    """Peak (VmHWM) and current (VmRSS) resident memory of a process, from /proc."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = _mib(int(rest.split()[0]))
    return values


def _size_mib(directory: Path) -> float:
    return round(sum(path.stat().st_size for path in directory.rglob("*.parquet")) / 2**20, 1)


def run(events: int, days: int, seed: int, work_dir: Path, driver_memory: str) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {driver_memory} pyspark-shell")
    seconds: dict[str, float] = {}
    input_dir, out_dir = work_dir / "events", work_dir / "report"

    started = time.perf_counter()
    synthesized = synthesize(input_dir, events=events, days=days, seed=seed, start_ms=START_MS)
    seconds["synthesize"] = time.perf_counter() - started
    python_after_synthesis = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    started = time.perf_counter()
    spark = build_session(MASTER, app_name="kts-audit-report-bench")
    seconds["spark_session"] = time.perf_counter() - started
    try:
        jvm_pid, jvm_heap_max = driver_jvm(spark)
        started = time.perf_counter()
        summary = run_report(spark, read_events(spark, input_dir=input_dir), out_dir, now_ms=synthesized.last_ms + 1)
        seconds["report"] = time.perf_counter() - started
        jvm = _jvm_status(jvm_pid)
    finally:
        spark.stop()

    return {
        "benchmark": "audit_report",
        "master": MASTER,
        "spark_submit_args": os.environ["PYSPARK_SUBMIT_ARGS"],
        "events": synthesized.events,
        "tokens": synthesized.tokens,
        "days": synthesized.days,
        "input_parquet_mib": _size_mib(input_dir),
        "seconds": {name: round(value, 2) for name, value in seconds.items()}
        | {"total": round(sum(seconds.values()), 2)},
        "report_events_per_second": round(synthesized.events / seconds["report"]),
        "driver_peak_memory_mib": {
            "python_after_synthesis": _mib(python_after_synthesis),
            "python": _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
            "jvm": jvm.get("VmHWM"),
            "jvm_heap_max": round(jvm_heap_max / 2**20, 1),
        },
        "report_summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--driver-memory", default="4g", help="the Spark driver JVM's heap (default 4g)")
    parser.add_argument("--work-dir", type=Path, help="keep the events and the report here (default: a temp dir)")
    args = parser.parse_args()
    if args.work_dir is not None:
        if args.work_dir.exists() and any(args.work_dir.iterdir()):
            parser.error(f"--work-dir {args.work_dir} is not empty")
        print(json.dumps(run(args.events, args.days, args.seed, args.work_dir, args.driver_memory), indent=2))
        return
    work_dir = Path(tempfile.mkdtemp(prefix="kts-bench-audit-"))
    try:
        print(json.dumps(run(args.events, args.days, args.seed, work_dir, args.driver_memory), indent=2))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
