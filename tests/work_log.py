"""The work a leadership runs in the leadership tests: each contender's work records that it leads until ``lost``
is set (or ``hold_s`` passes), so a test reads who leads now, who led, and how many worked at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

Work = Callable[[threading.Event], None]


class WorkLog:
    """Shared by the replicas' work functions: who leads now, who led, how many worked at once."""

    def __init__(self, hold_s: float = 60) -> None:
        self._lock = threading.Lock()
        self._hold_s = hold_s
        self.active: list[str] = []
        self.max_active = 0
        self.leaders: list[str] = []
        self.started: list[float] = []  # when each of ``leaders`` began its work (time.monotonic())
        self.ended: list[tuple[str, bool]] = []  # (identifier, whether ``lost`` was set when its work returned)

    def work_for(self, identifier: str) -> Work:
        def work(lost: threading.Event) -> None:
            with self._lock:
                self.active.append(identifier)
                self.max_active = max(self.max_active, len(self.active))
                self.leaders.append(identifier)
                self.started.append(time.monotonic())
            try:
                lost.wait(timeout=self._hold_s)
            finally:
                with self._lock:
                    self.active.remove(identifier)
                    self.ended.append((identifier, lost.is_set()))

        return work

    @property
    def current(self) -> str | None:
        with self._lock:
            return self.active[0] if len(self.active) == 1 else None
