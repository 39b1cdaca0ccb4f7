"""What the database's audit intent marks (SqlIntentMarks) alone do: a mark the database cannot take does not fail
the change it follows. Marked, found, cleared on SQLite and a real PostgreSQL: the contract suite
(tests/contract/test_intent_store.py)."""

from __future__ import annotations

from app.domain.clock import SystemClock
from app.storage.audit.database import make_engine
from app.storage.sql.intent_marks import SqlIntentMarks


def test_a_mark_the_database_cannot_take_is_logged_not_raised() -> None:
    engine = make_engine("postgresql://nobody@127.0.0.1:1/none")  # nothing listens on port 1
    marks = SqlIntentMarks(engine, clock=SystemClock())

    marks.mark("7")  # the change it follows is made: the reconciler settles its event
    marks.clear_many([7])
    engine.dispose()
