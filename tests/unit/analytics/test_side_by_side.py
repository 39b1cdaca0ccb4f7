"""Jobs side by side: every result by its name, each name reported as it finishes, failures raised."""

from __future__ import annotations

import threading

import pytest

from app.analytics.side_by_side import JOBS_AT_ONCE, side_by_side


def test_every_result_comes_back_by_name_and_jobs_overlap() -> None:
    started = threading.Barrier(JOBS_AT_ONCE, timeout=10)  # only passes if that many run at once
    done: list[str] = []

    def job(value: int) -> int:
        started.wait()
        return value * value

    found = side_by_side({f"j{n}": (lambda n=n: job(n)) for n in range(JOBS_AT_ONCE)}, on_done=done.append)

    assert found == {f"j{n}": n * n for n in range(JOBS_AT_ONCE)}
    assert sorted(done) == sorted(found)


def test_a_failure_is_raised_after_the_others_ended() -> None:
    ended: list[str] = []

    def fails() -> None:
        raise ValueError("no such table")

    def works() -> str:
        ended.append("works")
        return "ok"

    with pytest.raises(ValueError, match="no such table"):
        side_by_side({"fails": fails, "works": works})
    assert ended == ["works"]
