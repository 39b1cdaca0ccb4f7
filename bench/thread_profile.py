"""CPU profiles of every thread of a benchmark's kts process (cProfile sees only the thread that enables it):
with ``BENCH_PROFILE`` set to a file, bench/serve_variant.py profiles each thread from its start and writes their
merged statistics there when the process exits (``pstats`` format: ``python -m pstats <file>``).

With ``BENCH_PROFILE_CLOCK=cpu`` each thread is timed by its own CPU time (``time.thread_time``) rather than the
wall clock: on a shared machine, waiting for a core or for the interpreter lock then counts for nothing, and
the profile shows what each function costs the CPU."""

from __future__ import annotations

import atexit
import cProfile
import os
import pstats
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _profile() -> cProfile.Profile:
    if os.environ.get("BENCH_PROFILE_CLOCK") == "cpu":
        return cProfile.Profile(time.thread_time)
    return cProfile.Profile()


def install(target: Path) -> None:
    # Wrapped where every thread starts, whatever its class: anyio's worker threads (where FastAPI runs plain
    # ``def`` endpoints and dependencies) override ``run``, so wrapping ``run`` missed them.
    original = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def bootstrap(self: threading.Thread) -> Any:
        profile = _profile()
        with _lock:
            _profiles.append(profile)
        profile.enable()
        try:
            return original(self)
        finally:
            profile.disable()

    threading.Thread._bootstrap_inner = bootstrap  # type: ignore[attr-defined]
    main = _profile()
    _profiles.append(main)
    main.enable()
    atexit.register(_write, target)
    # uvicorn answers SIGTERM with a graceful stop, then restores the handler it found and raises the signal again:
    # this one, which exits normally so that the profiles are written.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def _write(target: Path) -> None:
    with _lock:
        profiles = list(_profiles)
    merged: pstats.Stats | None = None
    for profile in profiles:
        profile.disable()  # threads still running at exit (daemons) stop being profiled here
        try:
            stats = pstats.Stats(profile)
        except TypeError:  # a profile that recorded nothing
            continue
        if merged is None:
            merged = stats
        else:
            merged.add(stats)
    if merged is not None:
        merged.dump_stats(str(target))
