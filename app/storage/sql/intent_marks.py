"""Audit intent marks for a cluster whose changes cannot carry a marker (the Kafka protocol): a row in
``audit_intent_marks`` written once the cluster has answered a change, named by the pending event's id.

ZooKeeper creates its marker in the change's own transaction, so there the marker exists if and only if the
change was applied. Here the mark follows the change: a mark means applied, but a replica killed between the
RPC and the mark leaves none. So the reconciler (app/storage/kafka/cluster_audit.py) asks the cluster about token
changes whatever the marks say, and uses a mark where the cluster cannot tell it (a renew or an expire it marks;
ACL and credential changes). Both the ``IntentStore`` the auditor clears and the ``IntentMarks`` stores mark.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import Engine, delete, select

from app.domain.clock import Clock
from app.domain.errors import KtsError
from app.storage.audit.database import translated_db_errors
from app.storage.sql.statements import insert_if_absent
from app.storage.sql.tables import audit_intent_marks as marks

log = logging.getLogger(__name__)
CHUNK = 500


class SqlIntentMarks:
    def __init__(self, engine: Engine, *, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def mark(self, intent: int) -> None:
        """Best effort: the change is made, and a mark the database cannot take leaves the event to the
        reconciler, which asks the cluster."""
        try:
            with translated_db_errors(), self._engine.begin() as connection:
                insert_if_absent(connection, marks, {"event_id": intent, "marked_at_ms": self._clock.now_ms()})
        except KtsError as exc:
            log.warning("audit intent %s not marked (the reconciler settles it): %s", intent, exc.message)

    def existing(self, event_ids: Sequence[int]) -> set[int]:
        found: set[int] = set()
        with translated_db_errors(), self._engine.connect() as connection:
            for start in range(0, len(event_ids), CHUNK):
                chunk = list(event_ids[start : start + CHUNK])
                found.update(
                    int(event_id)
                    for (event_id,) in connection.execute(select(marks.c.event_id).where(marks.c.event_id.in_(chunk)))
                )
        return found

    def clear(self, event_id: int) -> None:
        self.clear_many([event_id])

    def clear_soon(self, event_ids: Sequence[int]) -> None:
        self.clear_many(event_ids)

    def clear_many(self, event_ids: Sequence[int]) -> None:
        try:
            with translated_db_errors(), self._engine.begin() as connection:
                for start in range(0, len(event_ids), CHUNK):
                    chunk = list(event_ids[start : start + CHUNK])
                    connection.execute(delete(marks).where(marks.c.event_id.in_(chunk)))
        except KtsError:
            pass  # the marks of settled events are removed by the reconciler

    def clear_batch(self, event_ids: Sequence[int]) -> None:
        """A batch is marked one event at a time here (``mark``)."""
        self.clear_many(event_ids)

    def clear_batch_soon(self, event_ids: Sequence[int]) -> None:
        self.clear_many(event_ids)

    def marks(self) -> list[list[int]]:
        return [[event_id] for event_id in self.list()]

    def list(self) -> list[int]:
        with translated_db_errors(), self._engine.connect() as connection:
            return [
                int(event_id) for (event_id,) in connection.execute(select(marks.c.event_id).order_by(marks.c.event_id))
            ]
