"""Spark jobs side by side: submitted from a few driver threads at once.

Most of the report's jobs are small (a table of a few thousand rows, a top-N query), and a small job
leaves the cores idle while the driver plans, schedules and commits it. Spark runs jobs from several
threads concurrently (PySpark pins each Python thread to a JVM thread), so a handful at a time keeps the
cores busy. Results do not depend on the order the jobs finish in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

T = TypeVar("T")
JOBS_AT_ONCE = 3


def side_by_side(jobs: Mapping[str, Callable[[], T]], *, on_done: Callable[[str], None] | None = None) -> dict[str, T]:
    """Run every job, ``JOBS_AT_ONCE`` at a time; returns their results by name. ``on_done`` is called with
    each name as its job finishes. The first failure is raised once every job has ended."""
    with ThreadPoolExecutor(max_workers=JOBS_AT_ONCE, thread_name_prefix="kts-report") as pool:
        futures = {pool.submit(job): name for name, job in jobs.items()}
        for future in as_completed(futures):
            if on_done is not None and future.exception() is None:
                on_done(futures[future])
    return {name: future.result() for future, name in futures.items()}
