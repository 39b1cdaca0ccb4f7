"""Phase lines: elapsed seconds, then the message as given (no markup read into it)."""

from __future__ import annotations

import io

from rich.console import Console

from app.analytics.progress import PhaseLines


def test_phase_lines_carry_the_elapsed_time_and_the_message() -> None:
    now = iter([100.0, 101.25, 163.5])
    output = io.StringIO()
    progress = PhaseLines(Console(file=output, width=200), clock=lambda: next(now))

    progress("read 1,000 events")
    progress("wrote [bold]token_lifecycle[/bold]")

    assert output.getvalue().splitlines() == [
        "    1.2 s  read 1,000 events",
        "   63.5 s  wrote [bold]token_lifecycle[/bold]",
    ]
