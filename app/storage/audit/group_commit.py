"""Group commit: the audit writes of concurrent requests share one transaction, so one commit (one fsync)
serves them all, and every caller still returns only once its own write is durable.

Each create writes two audit rows (the pending event, then its outcome). Committed one by one, SQLite's
single writer and its fsync per commit capped creates at a few hundred per second however fast ZooKeeper
was; PostgreSQL pays an fsync per commit too. Here the first writer to arrive commits for everyone
waiting behind it (leader/followers, as databases do for their own logs): no background thread, and no
waiting when there is no contention.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Engine

from app.storage.audit.database import translated_db_errors

T = TypeVar("T")
MAX_BATCH = 256


class _Write(Generic[T]):
    __slots__ = ("done", "error", "job", "lead", "result")

    def __init__(self, job: Callable[[Connection], T]) -> None:
        self.job = job
        self.result: T | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.lead = False  # woken to commit the next batch rather than with its result


class GroupCommitter:
    def __init__(self, engine: Engine, *, max_batch: int = MAX_BATCH) -> None:
        self._engine = engine
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Write[Any]] = []
        self._committing = False

    def run(self, job: Callable[[Connection], T]) -> T:
        """Run ``job`` in a transaction shared with concurrent callers; returns once it is committed.
        Database failures surface as ``StoreUnavailable``, as from any audit write."""
        write = _Write(job)
        with self._lock:
            self._queue.append(write)
            lead = not self._committing
            self._committing = True
        while True:
            if lead:
                self._commit_next_batch()
            write.done.wait()
            if not write.lead:
                break
            write.lead, lead = False, True
            write.done.clear()
        if write.error is not None:
            raise write.error
        return write.result  # type: ignore[return-value]

    def _commit_next_batch(self) -> None:
        with self._lock:
            batch = self._queue[: self._max_batch]
            del self._queue[: self._max_batch]
        self._commit(batch)
        with self._lock:
            if not self._queue:
                self._committing = False
                return
            successor = self._queue[0]  # the oldest waiter commits the next batch, itself included
        successor.lead = True
        successor.done.set()

    def _commit(self, batch: list[_Write[Any]]) -> None:
        try:
            with translated_db_errors(), self._engine.begin() as connection:
                results = [write.job(connection) for write in batch]
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
                batch[0].done.set()
                return
            for write in batch:  # retried alone, so that one write's failure stays its own
                self._commit_alone(write)
            return
        for write, result in zip(batch, results, strict=True):
            write.result = result
            write.done.set()

    def _commit_alone(self, write: _Write[Any]) -> None:
        try:
            with translated_db_errors(), self._engine.begin() as connection:
                write.result = write.job(connection)
        except BaseException as exc:  # handed to the caller's own thread, which raises it
            write.error = exc
        write.done.set()
