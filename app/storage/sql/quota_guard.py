"""Exact token quotas across replicas without ZooKeeper: creates charged to the same quota take turns on every
replica, and each turn tells the next whether its cache may be behind.

On a cluster reached through the Kafka protocol the create is an RPC to the controller, which cannot join a
database transaction, so a turn is a lock held around it, and a version moved before it:

1. Take each quota's lock, in one order on every replica (no deadlock): a PostgreSQL session advisory lock on
   a connection of its own, which PostgreSQL drops the moment the process dies, so a killed replica never
   holds a quota. (With SQLite, one replica by definition, a lock per quota in this process.)
2. In a committed transaction, move the quota's row in ``token_quota_guards`` on: ``attempts`` grows by one
   *before* the RPC, so a turn that dies anywhere after this point is seen by the next. The caller gets each
   quota's previous ``attempts``, its version: ``TokenQuotas`` (app/service/token_quotas.py) catches its
   cache up when that is not the version it last left, then counts and judges.
3. The caller creates the token (the RPC) and installs it in its cache.
4. The turn is marked settled (``settled`` = ``attempts``) and the locks released. A turn whose outcome is
   unknown (``StoreUnavailable``: the RPC may land although its answer was lost) is left unsettled.

A turn that finds the previous one unsettled (its replica died, or its RPC's outcome was unknown) cannot know
whether that token exists yet: an RPC still in flight may land after this turn's catch-up. It refuses with
``StoreUnavailable`` (503, retry) until ``in_flight_ms`` have passed since that turn began, by the database's
clock; after that the RPC has landed or never will, and the next turn's catch-up sees it. Set it to at least
the Kafka client's request timeout.

What the caller's count must promise: after ``catch_up()``, it includes every token whose create RPC was
answered before the call. A cache fed by DescribeDelegationToken does not promise that by itself (a broker
answers from its copy of the metadata, which takes in a record a moment after the controller answered), so the
create records the token (app/storage/sql/token_requesters.py) before its turn ends, and the cache counts the
tokens recorded in the last moments that its describe does not show yet (``SqlTokenRequesters.recent``).
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager

from sqlalchemy import ColumnElement, Connection, Engine, select, text, update

from app.domain.errors import StoreUnavailable
from app.domain.token_quota import QuotaKey
from app.storage.audit.database import translated_db_errors
from app.storage.sql.db_time import db_now_ms, read_now_ms
from app.storage.sql.statements import insert_if_absent
from app.storage.sql.tables import text_key, token_quota_guards

log = logging.getLogger(__name__)

IN_FLIGHT_MS = 30_000
LOCK_WAIT_MS = 10_000
_ADVISORY_NAMESPACE = "kts-token-quota:"


class SqlQuotaGuard:
    def __init__(self, engine: Engine, *, in_flight_ms: int = IN_FLIGHT_MS, lock_wait_ms: int = LOCK_WAIT_MS) -> None:
        self._engine = engine
        self._in_flight_ms = in_flight_ms
        self._lock_wait_ms = lock_wait_ms
        self._postgresql = engine.dialect.name == "postgresql"
        self._local: dict[tuple[str, str], threading.Lock] = {}
        self._local_lock = threading.Lock()

    @contextmanager
    def hold(self, keys: Sequence[QuotaKey]) -> Iterator[dict[QuotaKey, int]]:
        """A turn on every quota of ``keys``; yields each quota's version (its ``attempts`` before this turn). The
        ``QuotaGuard`` port of app/service/ports.py. Versions move on as the turn begins, not as it ends: a turn
        that dies after its RPC must still make the next catch up."""
        if not keys:
            yield {}
            return
        rows = sorted({(key.kind.value, text_key(str(key.principal))): key for key in keys}.items())
        with ExitStack() as stack:
            for row, _ in rows:  # this replica's own callers queue here, not on database connections
                stack.enter_context(self._local_turn(row))
            connection = stack.enter_context(self._connection())
            if self._postgresql:
                self._lock_advisory(connection, [row for row, _ in rows], stack)
            versions = self._begin(connection, rows)
            try:
                yield versions
            except StoreUnavailable:
                raise  # the outcome is unknown: the turn stays unsettled (see above)
            except BaseException:
                self._settle(connection, [row for row, _ in rows])
                raise
            self._settle(connection, [row for row, _ in rows])

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        with translated_db_errors(), self._engine.connect() as connection:
            yield connection

    def _local_turn(self, row: tuple[str, str]) -> threading.Lock:
        with self._local_lock:
            return self._local.setdefault(row, threading.Lock())

    def _lock_advisory(self, connection: Connection, rows: list[tuple[str, str]], stack: ExitStack) -> None:
        """Session locks, taken in ``rows`` order, released (or the connection discarded) on the way out."""
        stack.callback(_unlock_all, connection, [_advisory_key(row) for row in rows])
        with translated_db_errors(), connection.begin():
            connection.execute(text(f"SET LOCAL lock_timeout = {int(self._lock_wait_ms)}"))
            for row in rows:
                connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _advisory_key(row)})

    def _begin(self, connection: Connection, rows: list[tuple[tuple[str, str], QuotaKey]]) -> dict[QuotaKey, int]:
        versions: dict[QuotaKey, int] = {}
        with translated_db_errors(), connection.begin():
            now = read_now_ms(connection)
            for (kind, principal_key), key in rows:
                insert_if_absent(
                    connection,
                    token_quota_guards,
                    {"kind": kind, "principal_key": principal_key, "attempts": 0, "settled": 0, "attempted_at_ms": 0},
                )
                attempts, settled, attempted_at = connection.execute(
                    select(
                        token_quota_guards.c.attempts,
                        token_quota_guards.c.settled,
                        token_quota_guards.c.attempted_at_ms,
                    ).where(_row(kind, principal_key))
                ).one()
                if settled < attempts and now < attempted_at + self._in_flight_ms:
                    wait_s = -(-(attempted_at + self._in_flight_ms - now) // 1000)
                    raise StoreUnavailable(
                        "A token create charged to this quota was interrupted and may still land on the cluster; "
                        f"retry in {wait_s} s.",
                    )
                connection.execute(
                    update(token_quota_guards)
                    .where(_row(kind, principal_key))
                    .values(attempts=attempts + 1, settled=attempts, attempted_at_ms=db_now_ms())
                )
                versions[key] = int(attempts)
        return versions

    def _settle(self, connection: Connection, rows: list[tuple[str, str]]) -> None:
        try:
            with translated_db_errors(), connection.begin():
                for kind, principal_key in rows:
                    connection.execute(
                        update(token_quota_guards)
                        .where(_row(kind, principal_key))
                        .values(settled=token_quota_guards.c.attempts)
                    )
        except StoreUnavailable as exc:  # left unsettled: the next turn waits out the in-flight time
            log.warning("a quota turn could not be marked settled: %s", exc.message)


def _row(kind: str, principal_key: str) -> ColumnElement[bool]:
    return (token_quota_guards.c.kind == kind) & (token_quota_guards.c.principal_key == principal_key)


def _advisory_key(row: tuple[str, str]) -> int:
    """A signed 64-bit advisory lock key from the quota's row key (a collision only makes two quotas take
    turns together)."""
    kind, principal_key = row
    digest = text_key(f"{_ADVISORY_NAMESPACE}{kind}:{principal_key}")
    return int(struct.unpack(">q", bytes.fromhex(digest[:16]))[0])


def _unlock_all(connection: Connection, keys: list[int]) -> None:
    try:
        with connection.begin():
            for key in reversed(keys):
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    except Exception as exc:  # a connection that may still hold a lock never goes back to the pool
        log.warning("releasing quota locks failed (%s); the connection is discarded", type(exc).__name__)
        connection.invalidate()
