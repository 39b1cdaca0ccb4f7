"""The system clock skewed by an offset a test sets or moves: the injected clock of an app or a store, for tests
that make time pass (a token past its expiry, a burst that ended) or replicas whose clocks disagree. Tests of pure
logic use ``tests.unit.fakes.FakeClock``, which does not move on its own."""

from __future__ import annotations

from app.domain.clock import SystemClock


class ShiftedClock(SystemClock):
    def __init__(self, offset_ms: int = 0) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms
