"""Phase lines on stderr while the report runs: how long since the start, what was done, with counts.

Spark's own progress bar is off (it redraws one line per stage, dozens of times); these lines say what
the job is doing in the report's terms instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

Progress = Callable[[str], None]
"""Called with one line per phase."""


def no_progress(_message: str) -> None:
    """A ``Progress`` that says nothing."""


class PhaseLines:
    """A ``Progress`` printing ``  12.3 s  message`` lines to stderr (plain text when not a terminal)."""

    def __init__(self, console: Console | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self._clock = clock
        self._started = clock()

    def __call__(self, message: str) -> None:
        self._console.print(f"[dim]{self._clock() - self._started:7.1f} s[/dim]  {escape(message)}")
