"""Group commit: the audit writes of concurrent requests share one transaction, so one commit (one fsync)
serves them all, and every caller still returns only once its own write is durable.

Each create writes two audit rows (the pending event, then its outcome). Committed one by one, SQLite's
single writer and its fsync per commit capped creates at a few hundred per second however fast ZooKeeper
was; PostgreSQL pays an fsync per commit too. Here the first writer to arrive commits for everyone
waiting behind it (leader/followers, as databases do for their own logs): no background thread, and no
waiting when there is no contention.

Writes of one kind (``Batched``: the append of one event, the settling of one event) that share a commit also
share a statement: the batch runs each kind once, with every writer's parameters (an executemany), rather than
one statement per writer. Building and running a statement is most of what a write costs the CPU, so a commit
shared by eight creates costs little more than one create's. A write that fails in a batch (or a kind that
cannot answer each writer exactly, ``Ambiguous``) rolls the batch back, and each write is retried on its own, so
one write's failure stays its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Connection, Engine

from app.storage.audit.database import translated_db_errors

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R", covariant=True)
MAX_BATCH = 256


class Batched(Protocol[R]):
    """A kind of write whose concurrent instances run as one statement: ``execute`` gets the parameters of every
    write of the kind in a batch, in order, and answers each its result, in the same order."""

    def execute(self, connection: Connection, parameters: list[Any]) -> Sequence[R]: ...


class Ambiguous(Exception):
    """Raised by a ``Batched`` kind that cannot tell each write of a batch its own result (say, how many of the
    rows an executemany updated, but not which): the batch is rolled back and each write retried alone."""


class _Write(Generic[T]):
    __slots__ = ("done", "error", "job", "kind", "lead", "parameters", "result")

    def __init__(self, job: Callable[[Connection], T] | None, kind: Batched[T] | None, parameters: Any) -> None:
        self.job = job
        self.kind = kind
        self.parameters = parameters
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
        return self._submit(_Write(job, None, None))

    def write(self, kind: Batched[T], parameters: Any) -> T:
        """One write of ``kind`` with ``parameters``, sharing its statement with the writes of the same kind
        committed with it; returns its own result once committed."""
        return self._submit(_Write(None, kind, parameters))

    def _submit(self, write: _Write[T]) -> T:
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
                results = _execute(connection, batch)
        except Exception as exc:
            if len(batch) == 1 and not isinstance(exc, Ambiguous):
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
                (write.result,) = _execute(connection, [write])
        except BaseException as exc:  # handed to the caller's own thread, which raises it
            write.error = exc
        write.done.set()


def _execute(connection: Connection, batch: list[_Write[Any]]) -> list[Any]:
    """Every write of ``batch`` on ``connection``: jobs one by one, each kind once for all its writes."""
    results: list[Any] = [None] * len(batch)
    kinds: dict[int, tuple[Batched[Any], list[int]]] = {}
    for position, write in enumerate(batch):
        if write.kind is None:
            assert write.job is not None
            results[position] = write.job(connection)
        else:
            kinds.setdefault(id(write.kind), (write.kind, []))[1].append(position)
    for kind, positions in kinds.values():
        answers = kind.execute(connection, [batch[position].parameters for position in positions])
        for position, answer in zip(positions, answers, strict=True):
            results[position] = answer
    return results
