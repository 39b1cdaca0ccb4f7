"""Per-account locks (the ``LockoutStore`` and ``LockListing`` ports) held in this process, for ONE replica: the
in-memory backend's, and a Kafka-protocol deployment's without an audit database. A lock lasts its duration by
the injected clock (one process, one clock)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.domain.clock import Clock
from app.domain.lockout import Lock, LockInForce


class MemoryLockoutStore:
    """``LockoutStore`` of one replica: locks end by the injected clock (one process, one clock)."""

    def __init__(self, clock: Clock, *, max_locks: int = 1000) -> None:
        self._clock = clock
        self._max_locks = max_locks
        self._ends: dict[str, int] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        pass

    def replicas(self) -> int:
        return 1

    def in_force(self) -> int:
        now_ms = self._clock.now_ms()
        with self._lock:
            return sum(1 for end in self._ends.values() if end > now_ms)

    def locked_ms(self, key: str) -> int:
        with self._lock:
            return max(0, self._ends.get(key, 0) - self._clock.now_ms())

    def share(self, lock: Lock) -> bool:
        now_ms = self._clock.now_ms()
        with self._lock:
            in_force = self._ends.get(lock.key, 0) > now_ms
            if not in_force and sum(1 for end in self._ends.values() if end > now_ms) >= self._max_locks:
                return False
            self._ends[lock.key] = max(self._ends.get(lock.key, 0), now_ms + lock.duration_ms)
            return True

    def release(self, key: str, duration_ms: int) -> bool:
        with self._lock:
            was = self._ends.pop(key, 0) > self._clock.now_ms()
            listeners = list(self._listeners)
        for listener in listeners:
            listener(key)
        return was

    def on_released(self, listener: Callable[[str], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def in_force_locks(self) -> list[LockInForce]:
        now_ms = self._clock.now_ms()
        with self._lock:
            return [LockInForce(key, None, end - now_ms) for key, end in self._ends.items() if end > now_ms]

    def remove_ended(self) -> int:
        now_ms = self._clock.now_ms()
        with self._lock:
            ended = [key for key, end in self._ends.items() if end <= now_ms]
            for key in ended:
                del self._ends[key]
        return len(ended)
