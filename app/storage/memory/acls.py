"""ACLs held in this process: the ``AclStore`` and the ``AclView`` of app/service/ports.py over one
``AclSnapshot``. The store is the view's source, so the view never lags and ``refresh`` has nothing to read.
As in Kafka, a change that leaves a resource without entries removes it, and an edit that changes nothing
writes nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.domain.acl import AccessControlEntry, AclSnapshot, ResourcePattern

Entries = frozenset[AccessControlEntry]


class MemoryAclStore:
    """``AclStore``: an edit reads and writes under one lock (``edit`` is a pure function of the entries)."""

    def __init__(self) -> None:
        self._snapshot = AclSnapshot()
        self._lock = threading.Lock()

    def snapshot(self) -> AclSnapshot:
        return self._snapshot  # immutable: readers never take the lock

    def change(
        self, pattern: ResourcePattern, edit: Callable[[Entries], Entries], intent: str | None = None
    ) -> tuple[Entries, Entries]:
        with self._lock:
            before = self._snapshot.entries(pattern)
            after = frozenset(edit(before))
            if after != before:
                self._snapshot = self._snapshot.replace(pattern, after)
            return before, after


class MemoryAclView:
    """``AclView`` of the store's own ACLs."""

    def __init__(self, store: MemoryAclStore) -> None:
        self._store = store

    def snapshot(self) -> AclSnapshot:
        return self._store.snapshot()

    def refresh(self, pattern: ResourcePattern) -> None:
        pass  # the store is the view's source
