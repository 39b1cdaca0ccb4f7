"""The listeners a lockout store tells of every release it sees (both stores, ZooKeeper's and the database's)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)


class ReleaseListeners:
    def __init__(self) -> None:
        self._listeners: list[Callable[[str], None]] = []

    def add(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def notify(self, keys: Iterable[str]) -> None:
        """Each listener hears each key; one that fails is logged and does not keep the others from hearing."""
        for key in keys:
            for listener in self._listeners:
                try:
                    listener(key)
                except Exception:
                    log.exception("a lockout release listener failed")
