"""Per-account locks shared by every replica: the children of ``/kts/lockouts`` (app/storage/zk/znodes/kts.py),
followed by a children watch, and the count of live replicas (the sweeper election's contenders), followed the
same way.

ZooKeeper's clock decides. A lock lasts its duration from its znode's creation time (``ctime``), so a replica
whose clock runs ahead neither ends locks early nor deletes anyone's. Each replica keeps an estimate of
ZooKeeper's clock: its own clock plus an offset, read from the ``mtime`` of a write (at start, then at most once a
minute without waiting for it, and from the ``ctime`` of each lock it creates). The write is taken as done when
its answer arrives, so ZooKeeper's clock is never guessed ahead of itself: a lock may look a few milliseconds
younger than it is, never older. Only the leader deletes ended locks (``remove_ended``), from a fresh reading.

A watch callback never waits on ZooKeeper (kazoo runs callbacks on its one event thread): the creation time of
a lock this replica has not seen before is asked for without waiting, and until the answer arrives the lock is
taken as created when it was first seen. ZooKeeper is written when a lock is shared or released, never per
attempt.

Bounded. At most ``max_shared`` locks in force are shared (ended ones, which the leader deletes within its
interval, do not count), and nothing is added once the list holds twice that: the list every replica watches
stays a small fraction of what a Java client can list. A lock past the bound is the locking replica's own, and
the caller says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from app.domain.clock import Clock
from app.domain.lockout import Lock, LockInForce
from app.storage.lockout_mirror import LockoutMirror
from app.storage.release_listeners import ReleaseListeners
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import session_errors_translated
from app.storage.zk.znodes import KtsZNodes
from app.storage.zk.znodes.kts import LockoutKind

log = logging.getLogger(__name__)

MAX_SHARED_LOCKS = 1_000
CLOCK_REFRESH_MS = 60_000


@dataclass(slots=True)
class _Entry:
    kind: LockoutKind
    key: str
    duration_ms: int
    since_ms: int  # ZooKeeper's clock: the znode's ctime once read, until then when this replica first saw it
    ctime_known: bool = False

    @property
    def ends_ms(self) -> int:
        return self.since_ms + self.duration_ms

    @property
    def is_lock(self) -> bool:
        return self.kind is LockoutKind.LOCK


class ZkLockoutStore(LockoutMirror[str, _Entry]):
    """The view (``LockoutMirror``) holds each child of ``/kts/lockouts`` by its znode name."""

    def __init__(self, zk: ZkConnection, *, service_id: str, clock: Clock, max_shared: int = MAX_SHARED_LOCKS) -> None:
        super().__init__(max_shared=max_shared)
        self._zk = zk
        self._service_id = service_id
        self._clock = clock
        self._unlisted: set[str] = set()  # names this replica created that no child list has shown yet
        self._offset_ms = 0  # ZooKeeper's clock minus this replica's
        self._offset_read_ms: int | None = None  # this replica's clock when the offset was last read
        self._clock_reading = False
        self._replicas = 1
        self._listeners = ReleaseListeners()

    def start(self) -> None:
        """Read ZooKeeper's clock and follow the locks and the replicas (raises StoreUnavailable when ZooKeeper
        cannot be read)."""
        self.read_clock()
        with session_errors_translated():
            ChildrenWatch(self._zk.client, KtsZNodes.LOCKOUTS, self._on_children)
            ChildrenWatch(self._zk.client, KtsZNodes.SWEEPER_ELECTION, self._on_contenders)

    # -- the port (app/service/ports.LockoutStore)

    def replicas(self) -> int:
        return self._replicas

    def on_released(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(key)`` for each release seen, whichever replica made it (on kazoo's thread)."""
        self._listeners.add(listener)

    def share(self, lock: Lock) -> bool:
        """Create the lock every replica will see; False when the bound is reached (nothing written). Raises
        StoreUnavailable when ZooKeeper cannot take it."""
        if not self._room_to_share():
            return False
        data = KtsZNodes.encode_lockout(
            account=lock.account, failures=lock.failures, locked_at_ms=lock.locked_at_ms, service_id=self._service_id
        )
        self._create(KtsZNodes.lockout_prefix(LockoutKind.LOCK, lock.key, lock.duration_ms), data)
        return True

    def release(self, key: str, duration_ms: int) -> bool:
        """Delete the account's shared locks and tell every replica to forget its own lock and count of it (a
        release lasting ``duration_ms``, as long as a lock it releases can last); whether a shared lock was in
        force. Raises StoreUnavailable when ZooKeeper cannot be written (then nothing may have changed)."""
        now = self.now_ms()
        with self._guard:
            locks = {n: e for n, e in self._entries.items() if e.kind is LockoutKind.LOCK and e.key == key}
        self._zk.ensure_connected()
        pending = {name: self._zk.client.delete_async(f"{KtsZNodes.LOCKOUTS}/{name}") for name in locks}
        for name, result in pending.items():
            try:
                self._zk.wait(result)
            except NoNodeError:
                pass  # released meanwhile by another replica, or by the leader
            with self._guard:
                self._entries.pop(name, None)
        self._create(KtsZNodes.lockout_prefix(LockoutKind.RELEASE, key, duration_ms), b"")
        self._listeners.notify([key])
        return any(entry.ends_ms > now for entry in locks.values())

    def remove_ended(self) -> int:
        """Delete the locks that have ended and the releases that have lasted their time, by a fresh reading of
        ZooKeeper's clock, and children kts does not write (locks of older versions); how many locks ended.
        The leader's duty: every other replica only reads."""
        now = self.read_clock()
        self._zk.ensure_connected()
        names = self._zk.wait(self._zk.client.get_children_async(KtsZNodes.LOCKOUTS))
        stats = {name: self._zk.client.exists_async(f"{KtsZNodes.LOCKOUTS}/{name}") for name in names}
        doomed: list[str] = []
        ended_locks = 0
        for name, result in stats.items():
            stat = self._zk.wait(result)
            entry = KtsZNodes.lockout_entry(name)
            if stat is None:
                continue
            if entry is None or stat.ctime + entry.duration_ms <= now:
                doomed.append(name)
                ended_locks += entry is not None and entry.kind is LockoutKind.LOCK
        deletions = [self._zk.client.delete_async(f"{KtsZNodes.LOCKOUTS}/{name}") for name in doomed]
        for result in deletions:
            try:
                self._zk.wait(result)
            except NoNodeError:
                pass
        return ended_locks

    def in_force_locks(self) -> list[LockInForce]:
        """The locks in force as ZooKeeper holds them now, by a fresh reading of its clock, each with the account
        its data names (``kts lockout list``: read from ZooKeeper, not from this replica's view)."""
        now = self.read_clock()
        names = self._zk.wait(self._zk.client.get_children_async(KtsZNodes.LOCKOUTS))
        entries = {name: KtsZNodes.lockout_entry(name) for name in names}
        reads = {
            name: (entry, self._zk.client.get_async(f"{KtsZNodes.LOCKOUTS}/{name}"))
            for name, entry in entries.items()
            if entry is not None and entry.kind is LockoutKind.LOCK
        }
        locks = []
        for entry, result in reads.values():
            try:
                data, stat = self._zk.wait(result)
            except NoNodeError:
                continue  # released or deleted meanwhile
            remaining = stat.ctime + entry.duration_ms - now
            if remaining > 0:
                locks.append(LockInForce(entry.key, KtsZNodes.lockout_account(data), remaining))
        return locks

    # -- ZooKeeper's clock

    def now_ms(self) -> int:
        """ZooKeeper's clock, as this replica estimates it."""
        self._refresh_clock()
        return self._clock.now_ms() + self._offset_ms

    def read_clock(self) -> int:
        """Read ZooKeeper's clock now (one write); its time. Raises StoreUnavailable."""
        self._zk.ensure_connected()
        stat = self._zk.wait(self._zk.client.set_async(KtsZNodes.LOCKOUTS, b""))
        return self._sampled(stat.mtime)

    def _refresh_clock(self) -> None:
        """Read the clock again, without waiting for it, when the last reading is older than a minute."""
        local = self._clock.now_ms()
        with self._guard:
            due = self._offset_read_ms is None or local - self._offset_read_ms >= CLOCK_REFRESH_MS
            if not due or self._clock_reading or not self._zk.connected:
                return
            self._clock_reading = True
        try:
            self._zk.client.set_async(KtsZNodes.LOCKOUTS, b"").rawlink(self._on_clock)
        except Exception as exc:  # the session went away meanwhile: try again on a later call
            log.debug("ZooKeeper's clock could not be read: %r", exc)
            with self._guard:
                self._clock_reading = False

    def _on_clock(self, result: Any) -> None:
        try:
            if result.successful():
                self._sampled(result.value.mtime)
        finally:
            with self._guard:
                self._clock_reading = False

    def _sampled(self, zookeeper_ms: int) -> int:
        """Take ``zookeeper_ms``, ZooKeeper's clock at a write whose answer has just arrived, as its clock now."""
        local = self._clock.now_ms()
        with self._guard:
            self._offset_ms = zookeeper_ms - local
            self._offset_read_ms = local
        return zookeeper_ms

    # -- writes and watches

    def _create(self, prefix: str, data: bytes) -> None:
        self._zk.ensure_connected()
        path, stat = self._zk.wait(
            self._zk.client.create_async(
                prefix, data, acl=self._zk.acl_for(KtsZNodes.LOCKOUTS), sequence=True, include_data=True
            )
        )
        self._sampled(stat.ctime)
        name = path.rsplit("/", 1)[1]
        entry = KtsZNodes.lockout_entry(name)
        if entry is not None:
            with self._guard:
                self._entries[name] = _Entry(entry.kind, entry.key, entry.duration_ms, stat.ctime, ctime_known=True)
                self._unlisted.add(name)

    def _on_children(self, children: list[str]) -> None:
        now = self._clock.now_ms() + self._offset_ms  # never a ZooKeeper request on kazoo's event thread
        fresh: list[str] = []
        released: list[str] = []
        with self._guard:
            entries: dict[str, _Entry] = {}
            for name in children:
                known = self._entries.get(name)
                if known is not None:
                    entries[name] = known
                    continue
                entry = KtsZNodes.lockout_entry(name)
                if entry is None:
                    continue
                entries[name] = _Entry(entry.kind, entry.key, entry.duration_ms, now)
                fresh.append(name)
                if entry.kind is LockoutKind.RELEASE:
                    released.append(entry.key)
            # A list read before this replica's own create lacks it: keep what it created until a list shows it,
            # or shows a later znode without it (deleted meanwhile). Sequence numbers only grow.
            latest = max((_sequence(name) for name in children), default=-1)
            self._unlisted = {name for name in self._unlisted if name not in entries and _sequence(name) > latest}
            for name in self._unlisted:
                if name in self._entries:
                    entries[name] = self._entries[name]
            self._entries = entries
        for name in fresh:
            try:
                self._zk.client.exists_async(f"{KtsZNodes.LOCKOUTS}/{name}").rawlink(
                    lambda result, name=name: self._on_created(name, result)
                )
            except Exception as exc:  # the session went away: the watch runs again on reconnection
                log.debug("the creation time of a lock could not be asked for: %r", exc)
        self._listeners.notify(released)

    def _on_created(self, name: str, result: Any) -> None:
        if not result.successful() or result.value is None:
            return
        with self._guard:
            entry = self._entries.get(name)
            if entry is not None:
                entry.since_ms = result.value.ctime
                entry.ctime_known = True

    def _on_contenders(self, children: list[str]) -> None:
        self._replicas = max(1, len(children))


def _sequence(name: str) -> int:
    """The sequence number ZooKeeper appended to a child's name (-1: none)."""
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1
