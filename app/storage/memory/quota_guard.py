"""Turns between creates charged to the same quota (the ``QuotaGuard`` port), within this process: for ONE
replica (the in-memory backend, or a Kafka-protocol deployment without an audit database)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager

from app.domain.token_quota import QuotaKey


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
