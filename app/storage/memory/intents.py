"""Audit intent markers held in this process (the ``IntentStore`` and ``IntentMarks`` of app/service), for ONE
replica: the in-memory backend's, and a Kafka-protocol deployment's whose audit log is not a database (benchmarks
that measure against a no-op sink). ZooKeeper keeps them as znodes, the Kafka protocol in the audit database."""

from __future__ import annotations

import threading


class MemoryIntentStore:
    """``IntentStore`` and ``IntentMarks``: an intent is marked once the cluster answered its change."""

    def __init__(self) -> None:
        self._marked: set[int] = set()
        self._lock = threading.Lock()

    def path(self, event_id: int) -> str:
        return str(event_id)

    def mark(self, intent: int | str) -> None:
        """``intent``: the pending event's id (as text where a store still names it by ``path``)."""
        with self._lock:
            self._marked.add(int(intent))

    def marked(self, intent: object) -> None:
        """``mark`` for a change the in-memory stores made (``intent`` None: the change is not audited)."""
        if isinstance(intent, int | str):
            self.mark(intent)

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

    def clear_batch(self, event_ids: list[int]) -> None:
        """A batch is marked one event at a time here (``marked``)."""
        self.clear_many(event_ids)

    def clear_batch_soon(self, event_ids: list[int]) -> None:
        self.clear_many(event_ids)

    def marks(self) -> list[list[int]]:
        return [[event_id] for event_id in self.list()]

    def list(self) -> list[int]:
        with self._lock:
            return sorted(self._marked)
