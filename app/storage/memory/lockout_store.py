"""Per-account locks (the ``LockoutStore`` and ``LockListing`` ports) held in this process, for ONE replica: the
in-memory backend's, and a Kafka-protocol deployment's without an audit database. A lock lasts its duration by
the injected clock (one process, one clock)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.domain.clock import Clock
from app.domain.lockout import Lock, LockInForce
from app.storage.lockout_mirror import LockoutMirror


@dataclass(frozen=True, slots=True)
class _Held:
    key: str
    ends_ms: int

    @property
    def is_lock(self) -> bool:
        return True


class MemoryLockoutStore(LockoutMirror[str, _Held]):
    """``LockoutStore`` of one replica: locks end by the injected clock (one process, one clock). The view
    (``LockoutMirror``) holds each account's lock by its key."""

    def __init__(self, clock: Clock, *, max_locks: int = 1000) -> None:
        super().__init__(max_shared=max_locks)
        self._clock = clock
        self._listeners: list[Callable[[str], None]] = []

    def start(self) -> None:
        pass

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def replicas(self) -> int:
        return 1

    def share(self, lock: Lock) -> bool:
        now_ms = self._clock.now_ms()
        with self._guard:
            held = self._entries.get(lock.key)
            ends_ms = 0 if held is None else held.ends_ms
            # Only an account not locked yet takes room: the bound counts locks in force, not listed ones.
            if ends_ms <= now_ms and self._full(self._in_force_at(now_ms)):
                return False
            self._entries[lock.key] = _Held(lock.key, max(ends_ms, now_ms + lock.duration_ms))
            return True

    def release(self, key: str, duration_ms: int) -> bool:
        with self._guard:
            held = self._entries.pop(key, None)
            was = held is not None and held.ends_ms > self._clock.now_ms()
            listeners = list(self._listeners)
        for listener in listeners:
            listener(key)
        return was

    def on_released(self, listener: Callable[[str], None]) -> None:
        with self._guard:
            self._listeners.append(listener)

    def in_force_locks(self) -> list[LockInForce]:
        now_ms = self._clock.now_ms()
        with self._guard:
            return [LockInForce(k, None, h.ends_ms - now_ms) for k, h in self._entries.items() if h.ends_ms > now_ms]

    def remove_ended(self) -> int:
        now_ms = self._clock.now_ms()
        with self._guard:
            ended = [key for key, held in self._entries.items() if held.ends_ms <= now_ms]
            for key in ended:
                del self._entries[key]
        return len(ended)
