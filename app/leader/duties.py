"""The leader's duties run side by side under one leadership: each gets the same ``lost`` event and must
return promptly when it is set (app/storage/zk/election.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

Duty = Callable[[threading.Event], None]


def side_by_side(duties: Sequence[tuple[str, Duty]]) -> Duty:
    """One duty that runs each named duty in a thread of its own until all have returned."""

    def run(lost: threading.Event) -> None:
        threads = [threading.Thread(target=duty, args=(lost,), name=name, daemon=True) for name, duty in duties]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return run
