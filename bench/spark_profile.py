"""Where a Spark application's time went, from its event log: one line per SQL execution (a table written,
a query collected), with its wall time and its tasks' run, CPU and GC time, rows read and bytes shuffled.

    python -m bench.spark_profile EVENT_LOG_FILE [--top 30]

The event log is what ``spark.eventLog.enabled`` writes (``bench.audit_report --event-log DIR`` turns it
on). On a loaded machine the tasks' CPU time says more than their wall time: it is the work done, not the
time spent waiting for a core. Each execution is named by what it wrote (the last path element of its
Parquet target) or, for a query that writes nothing, by the first operators of its plan.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_METRICS = {
    "internal.metrics.executorRunTime": "run_ms",
    "internal.metrics.executorCpuTime": "cpu_ns",
    "internal.metrics.jvmGCTime": "gc_ms",
    "internal.metrics.input.recordsRead": "rows_read",
    "internal.metrics.input.bytesRead": "bytes_read",
    "internal.metrics.shuffle.write.bytesWritten": "shuffle_written",
    "internal.metrics.shuffle.read.recordsRead": "shuffle_rows_read",
    "internal.metrics.diskBytesSpilled": "spilled",
}
_TARGET = re.compile(r"\) Execute InsertIntoHadoopFsRelationCommand\n(?:.*\n)*?Arguments: ([^,\s]+)")


@dataclass
class Execution:
    id: int
    name: str = ""
    started_ms: int = 0
    ended_ms: int = 0
    stages: list[int] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def _name(start: dict[str, Any]) -> str:
    plan = start.get("physicalPlanDescription", "")
    target = _TARGET.search(plan)
    if target:
        return "write " + target.group(1).rstrip("/").rsplit("/", 1)[-1]
    lines = [line.strip("+-:* ") for line in plan.splitlines()[1:4] if line.strip()]
    return "query " + " / ".join(line.split(" (")[0].split("[")[0].strip() for line in lines)[:70]


def _lines(path: Path) -> Iterator[str]:
    """The log's lines: a file, or Spark's rolling-log directory (``eventlog_v2_*/events_N_*``) in order."""
    files = sorted(path.rglob("events_*"), key=lambda p: int(p.name.split("_")[1])) if path.is_dir() else [path]
    for file in files:
        with file.open(encoding="utf-8") as log:
            yield from log


def profile(path: Path) -> tuple[list[Execution], dict[str, float]]:
    executions: dict[int, Execution] = {}
    stage_execution: dict[int, int] = {}
    app: dict[str, float] = {}
    if True:
        for line in _lines(path):
            event = json.loads(line)
            kind = event["Event"]
            if kind.endswith("SQLExecutionStart"):
                execution = executions.setdefault(event["executionId"], Execution(event["executionId"]))
                execution.name, execution.started_ms = _name(event), event["time"]
            elif kind.endswith("SQLExecutionEnd"):
                executions.setdefault(event["executionId"], Execution(event["executionId"])).ended_ms = event["time"]
            elif kind == "SparkListenerJobStart":
                execution_id = (event.get("Properties") or {}).get("spark.sql.execution.id")
                if execution_id is not None:
                    for stage in event["Stage IDs"]:
                        stage_execution[stage] = int(execution_id)
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                owner = executions.get(stage_execution.get(info["Stage ID"], -1))
                for accumulable in info.get("Accumulables", []):
                    metric = _METRICS.get(accumulable.get("Name", ""))
                    if metric is None:
                        continue
                    value = float(accumulable.get("Value", 0))
                    app[metric] = app.get(metric, 0.0) + value
                    if owner is not None:
                        owner.totals[metric] += value
                if owner is not None:
                    owner.stages.append(info["Stage ID"])
    return sorted(executions.values(), key=lambda e: e.id), app


def _row(name: str, wall_s: float, totals: dict[str, float]) -> str:
    return (
        f"{name[:64]:64} {wall_s:8.1f} {totals.get('run_ms', 0) / 1000:8.1f} {totals.get('cpu_ns', 0) / 1e9:8.1f}"
        f" {totals.get('gc_ms', 0) / 1000:6.1f} {totals.get('rows_read', 0) / 1e6:8.2f}"
        f" {totals.get('shuffle_written', 0) / 2**20:8.1f} {totals.get('spilled', 0) / 2**20:7.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("event_log", type=Path)
    parser.add_argument("--top", type=int, default=40, help="the executions with the most CPU time (default 40)")
    args = parser.parse_args()
    executions, app = profile(args.event_log)
    print(
        f"{'execution':64} {'wall s':>8} {'run s':>8} {'cpu s':>8} {'gc s':>6} {'Mrows':>8} {'shufMiB':>8} {'spill':>7}"
    )
    ranked = sorted(executions, key=lambda e: -e.totals.get("cpu_ns", 0))[: args.top]
    for execution in sorted(ranked, key=lambda e: e.id):
        wall = max(0, execution.ended_ms - execution.started_ms) / 1000
        print(_row(f"{execution.id:3} {execution.name}", wall, execution.totals))
    print(_row("all stages", 0.0, app))


if __name__ == "__main__":
    main()
