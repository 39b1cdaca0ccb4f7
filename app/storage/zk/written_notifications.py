"""The change notifications this replica's session wrote itself, remembered until its own change follower meets
them (change_follower.py), so that it need not read back data it already knows.

A replica's caches follow every notification, its own writes' included (they are how a change made elsewhere
reaches it, and the follower cannot tell whose a name is from the listing). A sweep of 100k tokens writes 100k
notifications, and reading each back cost the sweeping replica a multiRead per batch and its decoding. A
transaction's results name the sequential znodes it created, and a notification's data never changes after its
creation, so the follower takes the data from here instead: the names it handles, and so its position in the
queue, still come from the listing, and any other writer's notification is still read.

Only queues a follower registered are remembered (nothing else would ever take them), and at most ``LIMIT``
entries: one a follower never takes (it listed the notification in the instant between the commit and its
recording here, and read it) leaves when the limit is reached; a notification not found here is read.

A follower announced a name by a persistent watch learns of it before the commit's answer (ZooKeeper sends the
event first): it can ``settle`` first, waiting for the commits this session has in flight, rather than read back
what is about to be recorded here. Commits carrying notifications say when they are ``sending`` and ``sent``.

A notification whose writer installs the change in this replica's caches itself (a token this replica creates is put
in its token cache as the create answers: app/service/token_quotas.py) is remembered without its data: its follower
moves past it without handing it to the cache, which would only read back from ZooKeeper the state it was given
(a multiRead for every few creates, and their decoding, on a replica serving creates).
"""

from __future__ import annotations

import threading
from typing import Final

LIMIT = 250_000  # more than the notifications a full sweep writes before its follower takes them
_ABSENT: Final = object()


class WrittenNotifications:
    def __init__(self) -> None:
        self._queues: frozenset[str] = frozenset()
        self._data: dict[str, bytes | None] = {}  # by path, in the order written (None: installed by its writer)
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._tickets = 0  # commits begun
        self._in_flight: set[int] = set()
        # The last ticket each settling follower waits for: an answer wakes them only once every commit the first
        # of them waits for is answered (under load commits are always in flight: woken at every answer, a follower
        # woke and slept again about once a create).
        self._awaited: list[int] = []

    def sending(self) -> int:
        """A commit carrying notifications is about to be sent: its ticket, for ``sent``."""
        with self._lock:
            self._tickets += 1
            self._in_flight.add(self._tickets)
            return self._tickets

    def sent(self, ticket: int) -> None:
        """The commit of ``ticket`` was answered (after ``record``), or failed."""
        with self._lock:
            in_flight = self._in_flight
            in_flight.discard(ticket)
            if self._awaited and (not in_flight or min(in_flight) > min(self._awaited)):
                self._settled.notify_all()

    def settle(self, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) until every commit in flight now was answered; False if none was."""
        with self._lock:
            if not self._in_flight:
                return False
            last = self._tickets
            self._awaited.append(last)
            try:
                self._settled.wait_for(lambda: not self._in_flight or min(self._in_flight) > last, timeout_s)
            finally:
                self._awaited.remove(last)
            return True

    def follow(self, queue: str) -> None:
        """Remember the notifications written under ``queue`` (a folder path) from now on."""
        with self._lock:
            self._queues = self._queues | {queue}

    def record(self, prefix: str, written: list[tuple[str, bytes | None]]) -> None:
        """``written``: the paths ZooKeeper gave the sequential notifications created under ``prefix`` (a queue's
        path and the name's prefix), with their data (None: its writer installed the change itself)."""
        if prefix.rsplit("/", 1)[0] not in self._queues:
            return
        with self._lock:
            data = self._data
            data.update(written)
            while len(data) > LIMIT:
                del data[next(iter(data))]

    def take(self, queue: str, names: list[str]) -> dict[str, bytes | None]:
        """The data of those of ``names`` (in ``queue``) written here, forgotten now; None for those whose writer
        installed the change itself (nothing to hand the cache)."""
        with self._lock:
            data = self._data
            if not data:
                return {}
            found: dict[str, bytes | None] = {}
            for name in names:
                value = data.pop(f"{queue}/{name}", _ABSENT)
                if value is not _ABSENT:
                    found[name] = value  # type: ignore[assignment]  # bytes or None, not the marker
            return found

    def forget(self, queue: str) -> None:
        """Drop what is remembered for ``queue`` (its follower marked every listed notification seen)."""
        start = f"{queue}/"
        with self._lock:
            self._data = {path: value for path, value in self._data.items() if not path.startswith(start)}
