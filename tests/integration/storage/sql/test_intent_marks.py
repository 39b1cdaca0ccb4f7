"""Audit intent marks in the database (SqlIntentMarks) on a real PostgreSQL and SQLite: marked once, found,
cleared; a mark the database cannot take does not fail the change it follows."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from app.domain.clock import SystemClock
from app.storage.audit.database import make_engine
from app.storage.sql.intent_marks import SqlIntentMarks


def test_marks_are_found_listed_and_cleared(coordination_db: str, engines: Callable[[str], Engine]) -> None:
    marks = SqlIntentMarks(engines(coordination_db), clock=SystemClock())
    for event_id in (3, 1, 2, 3):
        marks.mark(event_id)

    assert marks.list() == [1, 2, 3]
    assert marks.existing([1, 3, 9]) == {1, 3}
    marks.clear(1)
    marks.clear_many([2, 9])
    assert marks.list() == [3]


def test_a_mark_the_database_cannot_take_is_logged_not_raised() -> None:
    engine = make_engine("postgresql://nobody@127.0.0.1:1/none")  # nothing listens on port 1
    marks = SqlIntentMarks(engine, clock=SystemClock())

    marks.mark(7)  # the change it follows is made: the reconciler settles its event
    marks.clear_many([7])
    engine.dispose()
