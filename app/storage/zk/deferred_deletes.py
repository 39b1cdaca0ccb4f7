"""Znodes this session will delete soon, carried by its next transaction rather than a request of their own.

The audit intent markers of settled events (intent_store.py) must go, but nothing waits for them: a marker left
behind is harmless, the reconciler deletes it. Under concurrent creates a marker settles while the next create's
transaction is about to be sent, and a ZooKeeper write costs the server a log append and kts a request: so the
next ``ChangeTransaction`` takes the waiting deletions as operations of its own (transaction.py), and only when no
transaction comes within ``DELAY_S`` does the flusher thread hand them to a deletion of their own (``flush``): at
each tick it flushes those that were waiting at the tick before, so each waits from one to two ticks (one that
flushed whatever it found caught, under load, the deletions added just before it, some 30 writes a second).
Deletions wait only while the session is busy, the sign that others follow: while a transaction is being committed,
or within ``DELAY_S`` of one that began while another was (concurrent writers). Concurrent creates settle their
markers one after another between their own transactions, the one just answered and the next not yet sent: taken
as idle then, a quarter of a replica's markers under load were deleted by a write of their own. On an idle session,
and for a caller whose transactions follow one another, they go at once, as before, so requests that follow on the
session see them done.

A transaction that carries deletions fails as a whole if one of them finds no znode (the reconciler deleted the
marker first): the transaction then drops them, hands them to ``flush`` (which deletes one at a time what a whole
transaction could not) and goes again without them; a transaction that fails otherwise gives them back.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

DELAY_S = 0.05  # how long a deletion waits for a transaction to carry it
IDLE_TICKS = 20  # ticks without a deletion before the flusher parks
CARRIED_MAX = 200  # deletions one transaction carries at most (a marker's path is < 40 bytes)


class DeferredDeletes:
    def __init__(self, flush: Callable[[list[str]], None] | None = None) -> None:
        """``flush``: deletes paths no transaction took in time (set later by the owner of the deletions)."""
        self.flush = flush
        self._paths: list[str] = []  # oldest first
        self._aged = 0  # how many of the first paths were waiting at the flusher's last tick
        self._ready = threading.Condition()
        self._closed = False
        self._flusher: threading.Thread | None = None
        self._committing = 0  # transactions being committed on the session
        self._overlapped = -math.inf  # when a transaction last began while another was being committed (monotonic)
        # The flusher ticks every DELAY_S while deletions come, and parks after IDLE_TICKS ticks with none: under
        # load, adding a deletion then wakes no thread.
        self._parked = False

    def committing(self) -> None:
        """A transaction is being committed (``committed`` when answered)."""
        with self._ready:
            if self._committing:
                self._overlapped = time.monotonic()
            self._committing += 1

    def _busy(self) -> bool:
        """A transaction is being committed, or one began within ``DELAY_S`` while another was (under the lock)."""
        return bool(self._committing) or time.monotonic() - self._overlapped < DELAY_S

    def committed(self) -> None:
        with self._ready:
            self._committing -= 1

    def add(self, paths: list[str]) -> None:
        with self._ready:
            now = self._closed or self.flush is None or not self._busy()
            if not now:
                self._paths.extend(paths)
                if self._flusher is None:
                    self._flusher = threading.Thread(target=self._run, name="zk-deferred-deletes", daemon=True)
                    self._flusher.start()
                elif self._parked:
                    self._ready.notify()  # only a parked flusher needs waking: a ticking one sees them
        if now and self.flush is not None:  # no transaction is likely to follow soon: delete at once
            self.flush(paths)

    def take(self, limit: int = CARRIED_MAX) -> list[str]:
        """Up to ``limit`` waiting paths, for a transaction to delete (``give_back`` them if it fails)."""
        if not self._paths:  # read without the lock: a deletion added meanwhile waits for the next one
            return []
        with self._ready:
            taken = self._paths[:limit]
            del self._paths[:limit]
            self._aged = max(0, self._aged - len(taken))
            return taken

    def give_back(self, paths: list[str]) -> None:
        if paths:
            self.add(paths)

    def close(self) -> None:
        """Flush what waits now, and every later deletion at once (the session is closing)."""
        with self._ready:
            self._closed = True
            self._ready.notify()

    def reopen(self) -> None:
        """Defer deletions again (the session started again)."""
        with self._ready:
            self._closed = False

    def _run(self) -> None:
        idle = 0
        while True:
            with self._ready:
                if not self._paths and not self._closed and idle >= IDLE_TICKS:
                    self._parked = True
                    while not self._paths and not self._closed:
                        self._ready.wait()
                    self._parked = False
                    idle = 0
                if not self._closed:
                    self._ready.wait(DELAY_S)  # woken early only by close() (or while parked)
                closed = self._closed
                # Those waiting at the last tick have waited DELAY_S at least for a transaction to take them; the
                # others wait for the next tick. Closing, all go.
                flushed = len(self._paths) if closed else self._aged
                paths = self._paths[:flushed]
                del self._paths[:flushed]
                self._aged = len(self._paths)
                if closed:
                    self._flusher = None
            idle = 0 if paths or self._aged else idle + 1
            if paths and self.flush is not None:
                self.flush(paths)
            if closed:
                return
