"""ZooKeeper's persistent recursive watches (3.6+) for kazoo, which has no API for them: one registration on a
folder, then an event naming each znode created under it, for as long as the connection lasts.

Why: a change follower (change_follower.py) learned of a new notification by a one-shot children watch, and then
had to list the folder to find its name and leave the next watch. The folders keep every notification of the last
15 minutes, so each change made ZooKeeper send, and kazoo decode, thousands of names again, growing with the
traffic. A ``NodeCreated`` event of a recursive watch carries the new notification's path itself.

The wire format, owned here: an ``AddWatch`` request (opcode 106) is the folder's path and a mode
(``PERSISTENT_RECURSIVE`` = 1), answered by a bare reply header. Its events arrive as every watch event does (xid
-1: type, state, path), ``NodeCreated`` (1) for each descendant created. A server older than 3.6 answers the
unknown opcode with ``UNIMPLEMENTED`` (-6), which kazoo raises as ``UnimplementedError``: callers then fall back to
listing.

What a persistent watch does not survive: the connection. After a reconnection (same session or a new one) kazoo
re-arms only the one-shot watches it knows of, so the watch must be registered again, and events of changes made
while disconnected are lost: a caller registers again and lists once on every reconnection.

An adapter over private parts of kazoo, fenced here: no other module uses them. Relied on (and checked by
tests/unit/storage/zk/test_kazoo_private_api.py):
- ``KazooClient._call`` (see multi_read.py), to send the request;
- ``ConnectionHandler._read_watch_event(buffer, offset)``, called through the instance by the connection's reader
  thread for every event, which delivers an event only to the one-shot watchers registered for its exact path and
  drops any other. It is wrapped here per client: events of a created znode under a registered folder are handed to
  the folder's sinks first, on the reader thread (sinks must only record and wake), then kazoo handles the event as
  before. Being on the reader thread means an event is routed before the answer of any request sent after the
  change is set, so a ``sync`` that returned has every earlier event routed.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import UnimplementedError
from kazoo.protocol.serialization import int_int_struct, int_struct, read_string, write_string

log = logging.getLogger(__name__)

ADD_WATCH_OPCODE = 106
PERSISTENT_RECURSIVE = 1  # ZooKeeper's AddWatchMode
NODE_CREATED = 1  # a watch event's type

# Called, on kazoo's reader thread, with the name of a znode created in the folder (None: the folder itself).
Sink = Callable[[str | None], None]


class _AddWatch(NamedTuple):
    """A request kazoo's connection can send: it needs ``type``, ``serialize`` and ``deserialize``."""

    path: str
    mode: int
    type: int

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + int_struct.pack(self.mode))

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> None:
        return None  # the answer is its header alone


class CreatedChildren:
    """The persistent watches of one kazoo client, and where their events go."""

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self._sinks: dict[str, tuple[Sink, ...]] = {}  # by folder path under the chroot; replaced, never mutated
        self._lock = threading.Lock()
        self.refused = False  # the server answered UNIMPLEMENTED once: it has no persistent watches
        connection = client._connection
        kazoo_reads_event = connection._read_watch_event

        def read_watch_event(buffer: bytes, offset: int) -> Any:
            if self._sinks:
                self._route(buffer, offset)
            return kazoo_reads_event(buffer, offset)

        connection._read_watch_event = read_watch_event

    def add(self, path: str, sink: Sink) -> None:
        """Hand ``sink`` the names of the znodes created in ``path`` (chroot-relative) once it is registered."""
        full = self._client.chroot + path
        with self._lock:
            self._sinks = {**self._sinks, full: (*self._sinks.get(full, ()), sink)}

    def remove(self, path: str, sink: Sink) -> None:
        """Stop handing ``sink`` events (the server keeps the watch until the connection ends: events for a folder
        with no sink left are dropped as before)."""
        full = self._client.chroot + path
        with self._lock:
            sinks = tuple(each for each in self._sinks.get(full, ()) if each is not sink)
            self._sinks = {key: value for key, value in self._sinks.items() if key != full} | (
                {full: sinks} if sinks else {}
            )

    def register_async(self, path: str) -> Any:
        """Send the ``AddWatch`` for ``path`` (chroot-relative); the async result raises ``UnimplementedError``
        where the server has no persistent watches. Registering a folder twice on one connection is harmless."""
        result = self._client.handler.async_result()
        # kazoo has no request for it; its own calls end in the same one.
        self._client._call(_AddWatch(self._client.chroot + path, PERSISTENT_RECURSIVE, ADD_WATCH_OPCODE), result)
        return result

    def _route(self, buffer: bytes, offset: int) -> None:
        try:
            kind = int_int_struct.unpack_from(buffer, offset)[0]
            if kind != NODE_CREATED:
                return  # deletions (the leader's purge) and data changes say nothing new
            path = read_string(buffer, offset + int_int_struct.size)[0]
            sinks = self._sinks.get(path)
            if sinks is not None:  # the folder itself was created (again)
                name: str | None = None
            else:
                parent, _, name = path.rpartition("/")
                sinks = self._sinks.get(parent)
                if sinks is None:
                    return
            for sink in sinks:
                sink(name)
        except Exception:  # never break kazoo's reader thread; the follower's idle listing still finds changes
            log.exception("could not route a ZooKeeper watch event")


_BY_CLIENT: weakref.WeakKeyDictionary[KazooClient, CreatedChildren] = weakref.WeakKeyDictionary()
_BY_CLIENT_LOCK = threading.Lock()


def created_children(client: KazooClient) -> CreatedChildren:
    """The client's persistent watches (made, and its connection's event reading wrapped, on first use)."""
    with _BY_CLIENT_LOCK:
        watches = _BY_CLIENT.get(client)
        if watches is None:
            watches = _BY_CLIENT[client] = CreatedChildren(client)
        return watches


def is_refusal(exc: BaseException) -> bool:
    """Whether a registration failed because the server has no persistent watches (ZooKeeper before 3.6)."""
    return isinstance(exc, UnimplementedError)
