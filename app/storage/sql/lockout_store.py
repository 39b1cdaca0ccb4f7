"""Per-account locks shared by every replica through ``account_locks`` (the ``LockoutStore`` port of
app/service/ports.py), for clusters without ZooKeeper.

Each replica follows the table by reading it whole every ``poll_interval_s`` (1 s by default): a lock one
replica publishes refuses logins on every other within one interval, and the publishing replica refuses at
once (it adds the lock to its own view, and the domain's own lock bridges the gap, app/domain/lockout.py).
Logins never read the database: they read the view. The table holds at most ``MAX_PUBLISHED_LOCKS`` rows, so
a poll reads a bounded, small answer, and the database is written only when a lock is published or released.

Lock ends are the database's time: a lock is stored as starting at the database's now and lasting the
lock's duration, so replicas whose clocks disagree agree on when it ends. The view translates them to this
replica's clock (the port speaks the service's clock) with the offset measured at each poll, and a release
of ended locks compares with the database's now in the same way. Accounts are keyed by their SHA-256, so any
name (NUL, lone surrogates, very long ones) is a 64-character key.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy import Connection, Engine, delete, func, insert, select

from app.domain.clock import Clock
from app.domain.errors import KtsError
from app.domain.lockout import Lock
from app.storage.audit.database import translated_db_errors
from app.storage.sql.db_time import db_now_ms, read_now_ms
from app.storage.sql.tables import SERVICE_ID_LENGTH, account_locks, text_key

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
# As in ZooKeeper (app/storage/zk/lockout_store.py): a flood of names must not grow what every replica reads.
MAX_PUBLISHED_LOCKS = 5_000


class SqlLockoutStore:
    def __init__(
        self,
        engine: Engine,
        *,
        service_id: str,
        replicas: Callable[[], int],
        clock: Clock,
        poll_interval_s: float = POLL_INTERVAL_S,
    ) -> None:
        self._engine = engine
        self._service_id = service_id[:SERVICE_ID_LENGTH]
        self._replicas = replicas
        self._clock = clock
        self._poll_interval_s = poll_interval_s
        self._locks: dict[str, dict[int, int]] = {}  # account key -> {row id: until, database clock}
        self._count = 0
        self._offset_ms = 0  # the database's clock minus this replica's
        self._guard = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Read the locks once (raises StoreUnavailable when the database cannot be read), then follow them."""
        self.poll()
        self._thread = threading.Thread(target=self._run, name="lockout-poller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def replicas(self) -> int:
        return self._replicas()

    def locked_until(self, account: str) -> int | None:
        """The latest end (this replica's clock) of the account's locks, ended ones included; None: none."""
        with self._guard:
            locks = self._locks.get(text_key(account))
            return max(locks.values()) - self._offset_ms if locks else None

    def publish(self, lock: Lock) -> None:
        """Write the lock every replica will see; raises StoreUnavailable when the database cannot take it."""
        if self._count >= MAX_PUBLISHED_LOCKS:
            log.warning("%d account locks are published already: this one is kept by this replica only", self._count)
            return
        key = text_key(lock.account)
        duration = max(0, lock.until_ms - lock.locked_at_ms)
        with translated_db_errors(), self._engine.begin() as connection:
            self._measure(connection)
            row = connection.execute(
                insert(account_locks)
                .values(
                    account_key=key,
                    locked_at_ms=db_now_ms(),
                    until_ms=db_now_ms() + duration,
                    failures=lock.failures,
                    service_id=self._service_id,
                )
                .returning(account_locks.c.id, account_locks.c.until_ms)
            ).one()
        with self._guard:
            self._locks.setdefault(key, {})[int(row[0])] = int(row[1])
            self._count += 1

    def release(self, account: str, *, expired_by_ms: int | None = None) -> list[int]:
        """Delete the account's locks (only those ended by ``expired_by_ms``, this replica's clock, when given);
        the ends of those this call deleted (a lock another replica deleted first is not reported)."""
        key = text_key(account)
        condition = account_locks.c.account_key == key
        with translated_db_errors(), self._engine.begin() as connection:
            offset = self._measure(connection)
            if expired_by_ms is not None:
                condition = condition & (account_locks.c.until_ms <= expired_by_ms + offset)
            rows = connection.execute(
                delete(account_locks).where(condition).returning(account_locks.c.id, account_locks.c.until_ms)
            ).all()
        with self._guard:
            mine = self._locks.get(key, {})
            for row_id, _ in rows:
                mine.pop(int(row_id), None)
            if expired_by_ms is None:
                mine.clear()
            if not mine:
                self._locks.pop(key, None)
        return sorted(int(until) - offset for _, until in rows)

    def poll(self) -> None:
        """Read every published lock (and the database's clock) and make that the view."""
        with translated_db_errors(), self._engine.connect() as connection:
            self._measure(connection)
            rows = connection.execute(
                select(account_locks.c.account_key, account_locks.c.id, account_locks.c.until_ms)
                .order_by(account_locks.c.id.desc())  # past the cap (a race of publishers), the newest
                .limit(MAX_PUBLISHED_LOCKS)
            ).all()
            count = connection.execute(select(func.count()).select_from(account_locks)).scalar_one()
        locks: dict[str, dict[int, int]] = {}
        for key, row_id, until in rows:
            locks.setdefault(str(key), {})[int(row_id)] = int(until)
        with self._guard:
            self._locks = locks
            self._count = int(count)

    def _measure(self, connection: Connection) -> int:
        """The database's clock minus this replica's, read around one round trip; kept for the view."""
        before = self._clock.now_ms()
        database = read_now_ms(connection)
        after = self._clock.now_ms()
        offset = database - (before + after) // 2
        self._offset_ms = offset
        return offset

    def _run(self) -> None:
        while not self._stopped.wait(self._poll_interval_s):
            try:
                self.poll()
            except KtsError as exc:
                log.warning("account locks not refreshed (the last ones read still apply): %s", exc.message)
