"""Following change notifications the way brokers do, for every in-memory cache kts keeps.

A cache registers one handler per notification queue (a persistent-sequential znode folder such as
``/delegation_token/token_changes``). Watches only wake a worker thread, because kazoo runs watch
callbacks on a single thread that must not block on ZooKeeper requests. The worker lists the queue again
(leaving a new watch, children_list.py), hands each new notification's data to its queue's handler, in order,
and after a session expiry (when notifications may have been missed and purged) marks what exists as seen and
asks the cache to reload everything. It does not delete old notifications: the elected leader does
(notification_purger.py).

New means named after the greatest name handled so far. ZooKeeper numbers sequential znodes from their parent's
change counter, in commit order, zero-padded, so names sort in creation order; and a listing that holds a
notification holds every notification committed before it. So a notification missing from one listing sorts
after every name that listing held, and comparing each name with one string finds the new ones, where keeping
the set of names seen cost a set of the whole list (thousands of names) on every change.

A change made elsewhere reaches the cache after three round trips in a row: the listing, the notification, the
token it names. The next notification's name is known before the listing, whenever nothing was deleted from the
queue since the last one (the sequence number is the folder's change counter, which creates and deletes both
advance: only the leader's purge deletes): so its data is read speculatively, sent right behind the listing, and
the chain is two round trips. A guess the listing does not hold, or that finds nothing, is dropped; the
notification is then read as before.

Notifications this replica's session wrote itself are not read back: their data is known from the transaction
that created them (written_notifications.py); those whose writer installed the change in the cache itself (a token
this replica created) are not handed to the cache at all.

Where ZooKeeper has persistent recursive watches (3.6+), the follower does not list at all while connected: one
watch per queue names each notification as it is created (persistent_watch.py), so a change costs ZooKeeper, the
network and kazoo one event rather than a listing of every notification of the last 15 minutes. Events are ordered
as the commits, so the names after the greatest handled one are still the new ones, and a name both listed and
announced is handled once. The watch lasts as long as the connection: on every reconnection the follower registers
it again and lists once, the catch-up of whatever was created while it was away (and after a session loss reloads,
as before). An idle follower lists too, every ``IDLE_WAKE_S``. Where the server refuses the watch (before 3.6), it
follows by listing as described above, said once in the log. A notification this session wrote is announced before
the commit's answer (the server sends the event first), so the follower waits for this session's commits in flight
before reading any name it does not know (written_notifications.py): the data is then there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kazoo.exceptions import NoNodeError, UnimplementedError
from kazoo.protocol.states import KazooState, WatchedEvent

from app.domain.errors import KtsError, StoreUnavailable
from app.storage.zk.children_list import list_children_async
from app.storage.zk.connection import ZkConnection
from app.storage.zk.multi_read import ReadResult
from app.storage.zk.persistent_watch import CreatedChildren, created_children

log = logging.getLogger(__name__)

IDLE_WAKE_S = 30.0
_SEQUENCE_DIGITS = 10  # ZooKeeper's sequential suffix, zero-padded
_SEQUENCE_MAX = 2**31 - 1  # past it the counter wraps to negative numbers: no guess


def _data(answer: ReadResult) -> bytes:
    if isinstance(answer, Exception):
        raise StoreUnavailable(f"ZooKeeper refused to read a notification: {type(answer).__name__}.")
    return answer[0]


@dataclass(frozen=True)
class NotificationQueue:
    path: str
    handle: Callable[[bytes], None]  # called with a notification's data; may read ZooKeeper
    # When given, called once with the data of all new notifications, in order, instead of ``handle``:
    # lets a cache pipeline its reads for a burst of changes.
    handle_batch: Callable[[list[bytes]], None] | None = None


class ChangeFollower:
    def __init__(
        self, zk: ZkConnection, queues: Sequence[NotificationQueue], reload: Callable[[], None], *, name: str
    ) -> None:
        self._zk = zk
        self._queues = list(queues)
        self._reload = reload
        self._name = name
        # The greatest notification name handled (or marked seen at a load) in each queue.
        self._latest: dict[str, str] = {queue.path: "" for queue in self._queues}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._reload_needed = False
        self._worker: threading.Thread | None = None
        # One pass at a time, from the worker or from a request catching up; ``_passes`` counts them.
        self._pass_lock = threading.Lock()
        self._passes = 0
        # Following by persistent watches (None: by listing, the server has none): the names announced, per queue,
        # appended on kazoo's reader thread; and whether the next pass must register and list (a reconnection).
        self._watches: CreatedChildren | None = None
        self._announced: dict[str, deque[str]] = {queue.path: deque() for queue in self._queues}
        self._sinks: dict[str, Callable[[str | None], None]] = {}
        self._relist = False

    def start(self) -> None:
        """Load everything, then follow. Raises StoreUnavailable if the first load cannot be done."""
        for queue in self._queues:
            self._zk.written_notifications.follow(queue.path)  # this session's own notifications, not read back
        watches = created_children(self._zk.client)
        if not watches.refused:
            self._watches = watches
            for queue in self._queues:
                self._sinks[queue.path] = sink = self._sink(self._announced[queue.path])
                watches.add(queue.path, sink)
        try:
            self._load()
        except KtsError:
            if self._watches is not None or not watches.refused:
                raise
            self._load_after_refusal()
        self._zk.client.add_listener(self._on_state)
        self._worker = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._worker.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._unwatch()
        if self._worker is not None:
            self._worker.join(timeout=5)

    def _on_state(self, state: KazooState) -> None:
        if state == KazooState.LOST:
            self._reload_needed = True
        elif state == KazooState.CONNECTED:
            self._relist = True  # a new connection: persistent watches are gone, and events were lost meanwhile
            self._wake.set()

    def _sink(self, announced: deque[str]) -> Callable[[str | None], None]:
        """What the queue's persistent watch calls (kazoo's reader thread) with each new name: record and wake."""

        def sink(name: str | None) -> None:
            if name is None:  # the queue's folder was created again: list it
                self._relist = True
            else:
                announced.append(name)
            self._wake.set()

        return sink

    def _load_after_refusal(self) -> None:
        """The first load again, once kazoo has reconnected: a server refusing the persistent watch (one without
        them) answers and then closes the connection, which failed the listing behind the request."""
        deadline = time.monotonic() + self._zk.connection_timeout_s
        while True:
            time.sleep(0.1)
            try:
                self._load()
                return
            except KtsError:
                if time.monotonic() > deadline:
                    raise

    def _unwatch(self) -> None:
        if self._watches is not None:
            for path, sink in self._sinks.items():
                self._watches.remove(path, sink)
        self._watches = None

    def _register(self) -> None:
        """(Re)register every queue's persistent watch; a server without them turns this follower to listing."""
        watches = self._watches
        if watches is None:
            return
        self._zk.ensure_connected()
        registrations = [watches.register_async(queue.path) for queue in self._queues]
        try:
            for registration in registrations:
                self._zk.wait(registration)
        except UnimplementedError:
            if not watches.refused:
                watches.refused = True
                log.warning(
                    "ZooKeeper has no persistent watches (3.6 and later have them): change notifications are "
                    "followed by listing their folders after each change, which costs more as they accumulate"
                )
            self._unwatch()

    def _on_watch(self, _event: WatchedEvent) -> None:
        """A queue changed (kazoo's event thread): the worker lists it again, leaving a new watch."""
        if not self._stopped.is_set():
            self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            woken = self._wake.wait(timeout=IDLE_WAKE_S)
            self._wake.clear()
            if self._stopped.is_set():
                return
            if not woken:
                self._relist = True  # idle: list once, whatever an event could have missed
            try:
                with self._pass_lock:
                    self._pass()
            except KtsError as exc:  # ZooKeeper away: keep serving what we have, try again shortly
                log.warning("%s could not refresh: %s", self._name, exc.message)
                time.sleep(0.5)
                self._wake.set()

    def catch_up(self) -> None:
        """Handle every notification that exists now before returning, for a request that may have missed a
        change made elsewhere an instant ago (its watch event may still be on the way). Concurrent callers
        share passes: one that began after the call is enough."""
        asked = self._passes
        with self._pass_lock:
            if self._passes >= asked + 2:  # the pass running at the call, then a whole one after it
                return
            self._zk.sync()  # the change may have been acknowledged by another server a moment ago
            self._pass()

    def _pass(self) -> None:
        if self._reload_needed:
            self._load()
        elif self._watches is None:
            self._follow(listing=True)
        else:
            relist, self._relist = self._relist, False
            try:
                if relist:
                    self._register()
                self._follow(listing=relist or self._watches is None)
            except BaseException:
                self._relist = True  # names taken from the announcements may be unhandled: the next pass lists
                raise
        self._passes += 1

    def _load(self) -> None:
        # Mark the notifications present now as seen first: any that arrive during the load are handled
        # afterwards, and handling a change twice is harmless. Listing leaves the watches that wake the worker
        # (or, with persistent watches, registered before the listing, which announce what it misses).
        self._zk.ensure_connected()
        self._relist = False
        self._register()
        for queue in self._queues:
            self._zk.written_notifications.forget(queue.path)  # the load reads the state they name
            self._latest[queue.path] = max(self._list(queue.path), default="")
        self._reload()
        self._reload_needed = False

    def _follow(self, *, listing: bool) -> None:
        written = self._zk.written_notifications
        for queue in self._queues:
            latest = self._latest[queue.path]
            guess = next_name(latest)
            speculative = None
            if listing:
                listed = self._list_async(queue.path)
                # Sent right behind the listing: ZooKeeper answers a session's requests in order, so the read sees
                # at least what the listing saw.
                speculative = None if guess is None else self._zk.client.get_async(f"{queue.path}/{guess}")
                fresh = new_names(self._listed(listed), latest)
            else:
                fresh = self._announced_after(queue.path, latest)
            if not fresh:
                continue
            known: dict[str, bytes | None] = dict(written.take(queue.path, fresh))
            if not listing and len(known) < len(fresh) and written.settle(self._zk.request_timeout_s):
                known.update(written.take(queue.path, fresh))  # announced before its commit's answer recorded it
            if speculative is None and guess is not None and fresh[0] == guess and guess not in known:
                speculative = self._zk.client.get_async(f"{queue.path}/{guess}")  # named: read on its own
            if speculative is not None and fresh[0] == guess and guess not in known:
                data = _speculated(self._zk, speculative)
                if data is not None:
                    known[guess] = data
            rest = [name for name in fresh if name not in known]
            known.update(zip(rest, self._read(queue.path, rest), strict=True) if rest else ())
            # None: purged already, or written here by a writer that installed the change itself.
            batch = [(name, data) for name in fresh if (data := known[name]) is not None]
            if queue.handle_batch is not None and batch:
                try:
                    queue.handle_batch([data for _, data in batch])
                    batch = []
                except KtsError:
                    raise
                except Exception:  # find the notification at fault by handling them one at a time
                    log.exception("%s could not handle a batch of notifications; one at a time now", self._name)
            for name, data in batch:
                try:
                    queue.handle(data)
                except KtsError:
                    raise
                except Exception:  # a malformed notification must not stop the cache
                    log.exception("%s could not handle notification %s/%s", self._name, queue.path, name)
            self._latest[queue.path] = fresh[-1]

    def _announced_after(self, path: str, latest: str) -> list[str]:
        """The names the queue's persistent watch announced since the last pass that come after ``latest``."""
        announced = self._announced[path]
        names = []
        while announced:
            name = announced.popleft()
            if name > latest:
                names.append(name)
        return sorted(names)  # in commit order already; sorted for certain

    def _list(self, path: str) -> list[str]:
        """The queue's notification names, leaving a watch that wakes the worker at its next change (none when a
        persistent watch announces the changes)."""
        return self._listed(self._list_async(path))

    def _list_async(self, path: str) -> object:
        return list_children_async(self._zk.client, path, self._on_watch if self._watches is None else None)

    def _listed(self, listing: object) -> list[str]:
        try:
            return list(self._zk.wait(listing))
        except NoNodeError:  # removed by hand: nothing to follow (the idle wake-up lists it again)
            return []

    def _read(self, path: str, names: list[str]) -> list[bytes | None]:
        """The data of several notifications (None for those already purged), in few round trips."""
        answers = self._zk.read_many([f"{path}/{name}" for name in names])
        return [None if isinstance(answer, NoNodeError) else _data(answer) for answer in answers]


def _speculated(zk: ZkConnection, answer: object) -> bytes | None:
    """The speculative read's data, or None when it found nothing or failed (the notification is then read as
    any other, which reports a lost connection)."""
    try:
        return bytes(zk.wait(answer)[0])
    except Exception:
        return None


def next_name(latest: str) -> str | None:
    """The name ZooKeeper gives the notification after ``latest`` if nothing is deleted from the queue meanwhile
    (its sequence number plus one), or None when ``latest`` is no sequential name (nothing handled yet)."""
    prefix, digits = latest[:-_SEQUENCE_DIGITS], latest[-_SEQUENCE_DIGITS:]
    if not prefix or len(digits) != _SEQUENCE_DIGITS or not digits.isdigit() or int(digits) >= _SEQUENCE_MAX:
        return None
    return f"{prefix}{int(digits) + 1:0{_SEQUENCE_DIGITS}d}"


def new_names(names: list[str], latest: str) -> list[str]:
    """The names of ``names`` after ``latest`` (see the module docstring), in creation order."""
    return sorted(name for name in names if name > latest)
