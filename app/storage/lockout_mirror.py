"""What a replica knows of the shared account locks, and the answers every ``LockoutStore`` (app/service/ports.py)
reads from it: how long an account stays locked, how many locks are in force, and whether the bound leaves room
for one more. The ZooKeeper, database and in-memory stores differ in how they fill the view and by whose clock
they judge it (``now_ms``), not in these answers, so the answers are written here once.

A view entry is a lock or a release (the stores that share through a list keep both), with the account's key
and when it ends on the store's clock.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)


class MirroredLock(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def ends_ms(self) -> int: ...

    @property
    def is_lock(self) -> bool:
        """False for an entry that is not a lock (a release, kept while the other replicas may not have seen it)."""
        ...


K = TypeVar("K", bound=Hashable)
E = TypeVar("E", bound=MirroredLock)


class LockoutMirror(ABC, Generic[K, E]):
    """The view (``_entries``, guarded by ``_guard``) and the answers read from it; a store subclasses it, fills
    the view and says what time it is on its clock."""

    def __init__(self, *, max_shared: int) -> None:
        self._max_shared = max_shared
        self._entries: dict[K, E] = {}
        self._guard = threading.Lock()

    @abstractmethod
    def now_ms(self) -> int:
        """The store's clock, as this replica estimates it."""

    def locked_ms(self, key: str) -> int:
        """How much longer the account's shared locks last (0: none in force)."""
        now = self.now_ms()
        with self._guard:
            ends = [entry.ends_ms for entry in self._entries.values() if entry.is_lock and entry.key == key]
        return max(0, max(ends, default=0) - now)

    def in_force(self) -> int:
        """How many shared locks are in force (the figure the bound applies to)."""
        now = self.now_ms()
        with self._guard:
            return self._in_force_at(now)

    def _in_force_at(self, now_ms: int) -> int:
        """``in_force`` at ``now_ms``, for a caller that holds the guard."""
        return sum(1 for entry in self._entries.values() if entry.is_lock and entry.ends_ms > now_ms)

    def _full(self, in_force: int, listed: int = 0) -> bool:
        """Whether the bound refuses one more lock: ``max_shared`` in force, or twice that listed (ended ones the
        leader has not deleted yet count there), so what every replica reads stays small."""
        return in_force >= self._max_shared or listed >= 2 * self._max_shared

    def _room_to_share(self) -> bool:
        """Whether one more lock may be shared, by the view; when not, says so (the lock stays the locking
        replica's own, and the caller is told)."""
        in_force = self.in_force()
        with self._guard:
            listed = len(self._entries)
        if self._full(in_force, listed):
            log.warning("%d account locks are shared already: this one is kept by this replica only", in_force)
            return False
        return True
