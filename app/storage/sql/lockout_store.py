"""Per-account locks shared by every replica through ``account_locks`` (the ``LockoutStore`` port of
app/service/ports.py), for clusters without ZooKeeper.

The database's clock decides. A lock is a row that starts at the database's now and ends its duration later, so a
replica whose clock runs ahead neither ends locks early nor deletes anyone's. A super user's unlock deletes the
account's locks and adds a *release* row lasting as long as a lock it releases could, which tells every replica
to forget its own lock and count of the account. Only the leader deletes ended rows (``remove_ended``).

Each replica follows the table by reading it whole every ``poll_interval_s`` (1 s by default), together with the
database's clock: a lock one replica takes refuses logins on every other within one interval (the locking
replica refuses at once: it adds the lock to its view, and the domain's own lock bridges the gap,
app/domain/lockout.py), and a release reaches the others' listeners within one interval. Logins never read the
database: they read the view, whose ends are compared with the database's clock as estimated from this
replica's (the offset measured at each read). The table is written only when a lock is taken or released, and
holds a bounded number of rows: at most ``max_shared`` locks in force, and nothing is added past twice that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, delete, insert, select

from app.domain.clock import Clock
from app.domain.errors import KtsError
from app.domain.lockout import Lock, LockInForce
from app.service.poller import Poller
from app.storage.audit.database import translated_db_errors
from app.storage.lockout_mirror import LockoutMirror
from app.storage.release_listeners import ReleaseListeners
from app.storage.sql.db_time import db_now_ms, read_now_ms
from app.storage.sql.tables import SERVICE_ID_LENGTH, account_locks

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
# As in ZooKeeper (app/storage/zk/lockout_store.py): a flood of names must not grow what every replica reads.
MAX_SHARED_LOCKS = 1_000
LOCK = "lock"
RELEASE = "release"


@dataclass(frozen=True, slots=True)
class _Row:
    kind: str
    key: str
    until_ms: int  # the database's clock

    @property
    def ends_ms(self) -> int:
        return self.until_ms

    @property
    def is_lock(self) -> bool:
        return self.kind == LOCK


class SqlLockoutStore(LockoutMirror[int, _Row]):
    """The view (``LockoutMirror``) holds the table's rows by id."""

    def __init__(
        self,
        engine: Engine,
        *,
        service_id: str,
        replicas: Callable[[], int],
        clock: Clock,
        poll_interval_s: float = POLL_INTERVAL_S,
        max_shared: int = MAX_SHARED_LOCKS,
    ) -> None:
        super().__init__(max_shared=max_shared)
        self._engine = engine
        self._service_id = service_id[:SERVICE_ID_LENGTH]
        self._replicas = replicas
        self._clock = clock
        self._seen_releases: set[int] = set()
        # Rows this replica wrote, with when (monotonic) they were committed: a poll that began earlier may not
        # show them, so they are kept until one that began later has read the table.
        self._written: dict[int, tuple[float, _Row]] = {}
        self._offset_ms = 0  # the database's clock minus this replica's
        self._listeners = ReleaseListeners()
        self._poller = Poller(
            "lockout-poller", self.poll, interval_s=poll_interval_s, failed=_poll_failed, join_timeout_s=10
        )

    def start(self) -> None:
        """Read the locks once (raises StoreUnavailable when the database cannot be read), then follow them."""
        self.poll()
        self._poller.start()

    def stop(self) -> None:
        self._poller.stop()

    # -- the port (app/service/ports.LockoutStore)

    def replicas(self) -> int:
        return self._replicas()

    def on_released(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(key)`` for each release seen, whichever replica made it (on the poller's thread, or
        on the releasing caller's for this replica's own)."""
        self._listeners.add(listener)

    def share(self, lock: Lock) -> bool:
        """Write the lock every replica will see; False when the bound is reached (nothing written). Raises
        StoreUnavailable when the database cannot take it."""
        if not self._room_to_share():
            return False
        with translated_db_errors(), self._engine.begin() as connection:
            self._measure(connection)
            row_id, until = connection.execute(
                insert(account_locks)
                .values(
                    kind=LOCK,
                    account_key=lock.key,
                    locked_at_ms=db_now_ms(),
                    until_ms=db_now_ms() + lock.duration_ms,
                    failures=lock.failures,
                    service_id=self._service_id,
                )
                .returning(account_locks.c.id, account_locks.c.until_ms)
            ).one()
        self._wrote(int(row_id), _Row(LOCK, lock.key, int(until)))
        return True

    def release(self, key: str, duration_ms: int) -> bool:
        """Delete the account's locks and add a release lasting ``duration_ms`` (as long as a lock it releases
        can last), in one transaction; whether a lock was in force. Every replica's listeners hear of it, this
        one's at once. Raises StoreUnavailable when the database cannot be written (then nothing changed)."""
        with translated_db_errors(), self._engine.begin() as connection:
            now = self._measure(connection) + self._clock.now_ms()
            deleted = connection.execute(
                delete(account_locks)
                .where(account_locks.c.kind == LOCK, account_locks.c.account_key == key)
                .returning(account_locks.c.id, account_locks.c.until_ms)
            ).all()
            row_id, until = connection.execute(
                insert(account_locks)
                .values(
                    kind=RELEASE,
                    account_key=key,
                    locked_at_ms=db_now_ms(),
                    until_ms=db_now_ms() + duration_ms,
                    failures=0,
                    service_id=self._service_id,
                )
                .returning(account_locks.c.id, account_locks.c.until_ms)
            ).one()
        with self._guard:
            for deleted_id, _ in deleted:
                self._entries.pop(int(deleted_id), None)
            for row_id_, row in list(self._entries.items()):  # locks this replica saw that another deleted first
                if row.kind == LOCK and row.key == key:
                    del self._entries[row_id_]
                    self._written.pop(row_id_, None)
            self._seen_releases.add(int(row_id))
        self._wrote(int(row_id), _Row(RELEASE, key, int(until)))
        self._listeners.notify([key])
        return any(int(end) > now for _, end in deleted)

    def remove_ended(self) -> int:
        """Delete the locks that have ended and the releases that have lasted their time, by the database's
        clock; how many locks. The leader's duty: every other replica only reads."""
        with translated_db_errors(), self._engine.begin() as connection:
            ended = connection.execute(
                delete(account_locks).where(account_locks.c.until_ms <= db_now_ms()).returning(account_locks.c.kind)
            ).all()
        return sum(1 for (kind,) in ended if kind == LOCK)

    def in_force_locks(self) -> list[LockInForce]:
        """The locks in force as the table holds them now, by the database's clock (``kts lockout list``). A row
        keeps the account's key alone: the account is None."""
        with translated_db_errors(), self._engine.connect() as connection:
            now = read_now_ms(connection)
            rows = connection.execute(
                select(account_locks.c.account_key, account_locks.c.until_ms)
                .where(account_locks.c.kind == LOCK, account_locks.c.until_ms > now)
                .order_by(account_locks.c.id)
            ).all()
        return [LockInForce(str(key), None, int(until) - now) for key, until in rows]

    # -- the database's clock, and following the table

    def now_ms(self) -> int:
        """The database's clock, as this replica estimates it."""
        return self._clock.now_ms() + self._offset_ms

    def poll(self) -> None:
        """Read every row (and the database's clock) and make that the view; tell the listeners of releases not
        seen before."""
        began = time.monotonic()
        with translated_db_errors(), self._engine.connect() as connection:
            self._measure(connection)
            rows = connection.execute(
                select(account_locks.c.id, account_locks.c.kind, account_locks.c.account_key, account_locks.c.until_ms)
                .order_by(account_locks.c.id.desc())  # past the bound (a race of writers), the newest
                .limit(2 * self._max_shared)
            ).all()
        view = {int(row_id): _Row(str(kind), str(key), int(until)) for row_id, kind, key, until in rows}
        with self._guard:
            fresh = [
                row.key for row_id, row in view.items() if row.kind == RELEASE and row_id not in self._seen_releases
            ]
            self._seen_releases = {row_id for row_id, row in view.items() if row.kind == RELEASE}
            self._written = {row_id: entry for row_id, entry in self._written.items() if entry[0] > began}
            for row_id, (_, row) in self._written.items():
                view.setdefault(row_id, row)
            self._entries = view
        self._listeners.notify(fresh)

    def _wrote(self, row_id: int, row: _Row) -> None:
        with self._guard:
            self._written[row_id] = (time.monotonic(), row)
            self._entries[row_id] = row

    def _measure(self, connection: Connection) -> int:
        """The database's clock minus this replica's, read around one round trip; kept for the view."""
        before = self._clock.now_ms()
        database = read_now_ms(connection)
        after = self._clock.now_ms()
        offset = database - (before + after) // 2
        self._offset_ms = offset
        return offset


def _poll_failed(exc: KtsError) -> None:
    log.warning("account locks not refreshed (the last ones read still apply): %s", exc.message)
