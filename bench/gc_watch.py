"""The cyclic garbage collector's pauses in a benchmark's kts process: with ``BENCH_GC_WATCH`` set,
bench/serve_variant.py times every collection (``gc.callbacks``) and answers the counts so far at ``GET /bench/gc``,
so that a benchmark reads them before and after what it measures (bench.suite: during describe) and tells a pause
of the collector from other noise in a latency's tail."""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

GENERATIONS = 3
SLOW_MS = 1.0  # a collection this long or longer is counted apart: it shows in a p99 of a few ms


class GcWatch:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: float | None = None
        self.collections = [0] * GENERATIONS
        self.seconds = [0.0] * GENERATIONS
        self.max_ms = [0.0] * GENERATIONS
        self.slow = [0] * GENERATIONS

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        # Called with the interpreter lock held and the world stopped for the collection: nothing else runs between
        # a start and its stop, so one start time serves.
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        elapsed = time.perf_counter() - self._started
        self._started = None
        generation = int(info["generation"])
        with self._lock:
            self.collections[generation] += 1
            self.seconds[generation] += elapsed
            self.max_ms[generation] = max(self.max_ms[generation], elapsed * 1000)
            if elapsed * 1000 >= SLOW_MS:
                self.slow[generation] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "collections": list(self.collections),
                "ms": [round(seconds * 1000, 2) for seconds in self.seconds],
                "max_ms": [round(value, 2) for value in self.max_ms],
                f"at_least_{SLOW_MS:g}_ms": list(self.slow),
                "frozen_objects": gc.get_freeze_count(),
                "tracked_objects": len(gc.get_objects()),
            }


def install() -> GcWatch:
    watch = GcWatch()
    gc.callbacks.append(watch)
    return watch


def difference(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What happened between two snapshots: collections, time and slow ones per generation (0, 1, 2), the longest
    pause seen by the end, and the objects the collector tracks (frozen apart) then."""
    slow = f"at_least_{SLOW_MS:g}_ms"
    return {
        "collections": [a - b for a, b in zip(after["collections"], before["collections"], strict=True)],
        "ms": [round(a - b, 2) for a, b in zip(after["ms"], before["ms"], strict=True)],
        slow: [a - b for a, b in zip(after[slow], before[slow], strict=True)],
        "max_ms_so_far": after["max_ms"],
        "frozen_objects": after["frozen_objects"],
        "tracked_objects": after["tracked_objects"],
    }
