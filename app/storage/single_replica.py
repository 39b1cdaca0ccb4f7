"""In-process stand-ins for what replicas share, for a Kafka-protocol deployment whose audit log is not a
database (benchmarks that measure against a no-op sink): they hold only within this process, for ONE replica.

ZooKeeper mode keeps these in ZooKeeper (audit intent markers, quota guards, account locks); through the Kafka
protocol they live in the audit database (app/storage/sql/), where every replica sees them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from app.domain.clock import Clock
from app.domain.lockout import Lock, LockInForce
from app.domain.token_quota import QuotaKey
from app.storage.lockout_mirror import LockoutMirror


class MemoryIntentStore:
    """``IntentStore`` and ``IntentMarks``: an intent is marked once the cluster answered its change."""

    def __init__(self) -> None:
        self._marked: set[int] = set()
        self._lock = threading.Lock()

    def mark(self, intent: int) -> None:
        with self._lock:
            self._marked.add(intent)

    def existing(self, event_ids: list[int]) -> set[int]:
        with self._lock:
            return self._marked.intersection(event_ids)

    def clear(self, event_id: int) -> None:
        with self._lock:
            self._marked.discard(event_id)

    def clear_soon(self, event_ids: list[int]) -> None:
        self.clear_many(event_ids)

    def clear_many(self, event_ids: list[int]) -> None:
        with self._lock:
            self._marked.difference_update(event_ids)

    def list(self) -> list[int]:
        with self._lock:
            return sorted(self._marked)


class MemoryQuotaGuard:
    """``QuotaGuard``: creates charged to the same quota take turns within this process."""

    def __init__(self) -> None:
        self._versions: dict[QuotaKey, int] = {}
        self._turns: dict[QuotaKey, threading.Lock] = {}
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, keys: Sequence[QuotaKey]) -> Iterator[Mapping[QuotaKey, int]]:
        with ExitStack() as held:
            for key in sorted(keys, key=lambda key: (key.kind, str(key.principal))):  # one order: no deadlock
                with self._lock:
                    turn = self._turns.setdefault(key, threading.Lock())
                held.enter_context(turn)
            versions = {key: self._versions.get(key, 0) for key in keys}
            yield versions
            for key in keys:
                self._versions[key] = versions[key] + 1


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
