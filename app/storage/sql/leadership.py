"""Leadership among replicas through a lease row in the database, as a context that can be lost: the same
interface as the ZooKeeper election (app/storage/zk/election.py), for clusters without ZooKeeper.

One row of ``leader_leases`` per leadership: who holds it, until when by the database's clock, and a
generation that grows by one at every acquisition (a fencing token: ``holds`` lets a duty check, inside its
own transaction, that its term is still current). A replica takes the lease when it is free or has expired,
then renews it every third of its length. While it leads, ``work(lost)`` runs; ``lost`` is set when a renewal
is refused (someone else holds it), and also, without waiting for any answer, when the lease may have run
out: the leader gives up a fifth of a lease before the end of the last lease it knows it got. Renewals are
measured from the moment they were sent, before the database stamped the new end, so the leader's own
deadline always comes first: another replica can take over only after the lease has ended by the
database's clock, and by then the old leader's duties have been told to stop. This holds when the database
is unreachable and when the wall clock jumps (deadlines are on the monotonic clock). A process frozen
whole (SIGSTOP, a VM paused) may run a duty for an instant after it thaws before its watchdog does: a duty
whose writes must never land after a successor's checks its term with ``holds`` in the same transaction.

A replica killed outright stops renewing; the lease ends at most one lease length later, and the next
contender (they try every fifth of a lease) takes it. A replica that stops cleanly hands the lease back
at once. The contend loop is kept by hand for the reasons in app/storage/zk/election.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, Engine, and_, select, update

from app.domain.errors import KtsError
from app.storage.audit.database import translated_db_errors
from app.storage.leadership import ContendingLeadership
from app.storage.sql.db_time import db_now_ms
from app.storage.sql.statements import insert_if_absent
from app.storage.sql.tables import leader_leases

log = logging.getLogger(__name__)

LEASE_MS = 10_000
NAME_LENGTH = 64


@dataclass(frozen=True, slots=True)
class Term:
    """One replica's tenure of one lease."""

    name: str
    holder: str
    generation: int


def holds(connection: Connection, term: Term, *, lock: bool = True) -> bool:
    """Whether ``term`` is still the current, unexpired one, checked inside the caller's transaction. With
    ``lock`` on PostgreSQL the row is read ``FOR SHARE``: no one can take the lease over until the caller's
    transaction ends, so a write made in it cannot land after a successor's."""
    query = select(leader_leases.c.name).where(
        leader_leases.c.name == term.name,
        leader_leases.c.holder == term.holder,
        leader_leases.c.generation == term.generation,
        leader_leases.c.expires_at_ms > db_now_ms(),
    )
    if lock and connection.dialect.name == "postgresql":
        query = query.with_for_update(read=True)
    return connection.execute(query).first() is not None


class LeaseTable:
    """The lease statements, each its own short transaction."""

    def __init__(self, engine: Engine, name: str, holder: str, lease_ms: int) -> None:
        if not 0 < len(name) <= NAME_LENGTH:
            raise ValueError(f"a lease name is 1 to {NAME_LENGTH} characters")
        self._engine = engine
        self._name = name
        self._holder = holder
        self._lease_ms = lease_ms

    def acquire(self) -> Term | None:
        """Take the lease if it is free, has expired, or is already ours (a new term either way)."""
        with translated_db_errors(), self._engine.begin() as connection:
            insert_if_absent(
                connection,
                leader_leases,
                {"name": self._name, "holder": "", "generation": 0, "expires_at_ms": 0},
            )
            row = connection.execute(
                update(leader_leases)
                .where(
                    leader_leases.c.name == self._name,
                    (leader_leases.c.expires_at_ms <= db_now_ms()) | (leader_leases.c.holder == self._holder),
                )
                .values(
                    holder=self._holder,
                    generation=leader_leases.c.generation + 1,
                    expires_at_ms=db_now_ms() + self._lease_ms,
                )
                .returning(leader_leases.c.generation)
            ).first()
        return None if row is None else Term(self._name, self._holder, int(row[0]))

    def renew(self, term: Term) -> bool:
        """Extend the lease by a full length from now; False when ``term`` is no longer current."""
        with translated_db_errors(), self._engine.begin() as connection:
            result = connection.execute(
                update(leader_leases).where(_current(term)).values(expires_at_ms=db_now_ms() + self._lease_ms)
            )
        return result.rowcount == 1

    def release(self, term: Term) -> None:
        """End ``term`` now, so that another replica need not wait for it to run out."""
        with translated_db_errors(), self._engine.begin() as connection:
            connection.execute(update(leader_leases).where(_current(term)).values(expires_at_ms=0))

    def holder(self) -> str | None:
        """Who holds the lease now (None: nobody)."""
        with translated_db_errors(), self._engine.connect() as connection:
            row = connection.execute(
                select(leader_leases.c.holder).where(
                    leader_leases.c.name == self._name, leader_leases.c.expires_at_ms > db_now_ms()
                )
            ).first()
        return None if row is None else str(row[0])


def _current(term: Term) -> ColumnElement[bool]:
    return and_(
        leader_leases.c.name == term.name,
        leader_leases.c.holder == term.holder,
        leader_leases.c.generation == term.generation,
        leader_leases.c.expires_at_ms > db_now_ms(),
    )


class DbLeadership(ContendingLeadership):
    """The ``Leadership`` port by a lease row; the thread's life cycle is ``ContendingLeadership``'s, the lease's
    renewer and watchdog threads run beside the work."""

    def __init__(
        self,
        engine: Engine,
        name: str,
        identifier: str,
        work: Callable[[threading.Event], None],
        *,
        lease_ms: int = LEASE_MS,
    ) -> None:
        if lease_ms < 100:
            raise ValueError("a lease lasts at least 100 ms")
        super().__init__(name, identifier, work)
        self._table = LeaseTable(engine, name, identifier, lease_ms)
        self._lease_s = lease_ms / 1000
        self._helpers: list[threading.Thread] = []
        self._deadline = 0.0  # monotonic: when this replica must assume its lease has ended
        self._deadline_lock = threading.Lock()
        self.term: Term | None = None

    def holder(self) -> str | None:
        return self._table.holder()

    def _contend(self) -> None:
        retry_s = self._lease_s / 5
        while not self._stopped.is_set():
            sent = time.monotonic()
            try:
                term = self._table.acquire()
            except KtsError as exc:
                log.warning("contending for %s: %s", self._name, exc.message)
                term = None
            except Exception as exc:  # a database error kts does not translate: contend again, do not die
                log.warning("contending for %s: %r", self._name, exc)
                term = None
            if term is None:
                self._stopped.wait(retry_s)
                continue
            self._extend(sent)
            try:
                self._lead_term(term)
            except Exception:  # a duty that failed: the term ended with it; contend again
                log.exception("a duty of %s failed", self._name)
                self._stopped.wait(retry_s)

    def _extend(self, sent: float) -> None:
        with self._deadline_lock:
            self._deadline = sent + self._lease_s * 0.8

    def _remaining_s(self) -> float:
        with self._deadline_lock:
            return self._deadline - time.monotonic()

    def _lead_term(self, term: Term) -> None:
        if self._stopped.is_set():
            self._release(term)
            return
        self.term = term
        self._lead(f" (generation {term.generation})")

    def _began(self) -> None:
        assert self.term is not None  # set by _lead_term
        self._helpers = [
            threading.Thread(target=self._watch, name=f"lease-watchdog:{self._name}", daemon=True),
            threading.Thread(target=self._renew, args=(self.term,), name=f"lease-renewer:{self._name}", daemon=True),
        ]
        for helper in self._helpers:
            helper.start()

    def _ended(self) -> None:
        term, self.term = self.term, None
        for helper in self._helpers:
            helper.join(timeout=10)
        if term is not None:
            self._release(term)

    def _watch(self) -> None:
        """Sets ``lost`` when the last lease this replica knows it got may have run out, whether or not a
        renewal is stuck waiting for the database."""
        while not self._lost.is_set():
            remaining = self._remaining_s()
            if remaining <= 0:
                log.warning("%s gives up %s: its lease could not be renewed in time", self._identifier, self._name)
                self._lost.set()
                return
            self._lost.wait(remaining)

    def _renew(self, term: Term) -> None:
        interval_s = self._lease_s / 3
        retry_s = self._lease_s / 20
        wait_s = interval_s
        while not self._lost.wait(wait_s):
            sent = time.monotonic()
            try:
                renewed = self._table.renew(term)
            except KtsError as exc:  # the watchdog ends the term if this goes on
                log.warning("renewing the lease of %s: %s", self._name, exc.message)
                wait_s = retry_s
                continue
            if not renewed:
                log.warning("%s lost %s: the lease is no longer its own", self._identifier, self._name)
                self._lost.set()
                return
            self._extend(sent)
            wait_s = interval_s

    def _release(self, term: Term) -> None:
        try:
            self._table.release(term)
        except KtsError as exc:  # it runs out by itself
            log.warning("handing back the lease of %s: %s", self._name, exc.message)
