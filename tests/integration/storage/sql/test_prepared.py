"""A statement run as the driver's SQL (Prepared) does what the same Core statement does, on a real PostgreSQL and
SQLite: the values it binds by itself are bound, one row or many, in the same transaction; a statement whose values
need converting, or that expands a list, is run by SQLAlchemy as before."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from sqlalchemy import Column, Date, Engine, Integer, MetaData, String, Table, bindparam, insert, select, update

from app.storage.audit.database import make_engine
from app.storage.sql.prepared import Prepared

metadata = MetaData()
rows = Table(
    "prepared_rows",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(50)),
    Column("state", String(20), default="new"),
    Column("day", Date, nullable=True),
)


@pytest.fixture
def engine(any_audit_db: str) -> Iterator[Engine]:
    engine = make_engine(any_audit_db)
    metadata.create_all(engine)
    yield engine
    engine.dispose()


INSERT = Prepared(insert(rows), ["id", "name", "state"])
# Moves a row on only from the state the statement names itself (bound by the statement, not by the caller).
ADVANCE = Prepared(
    update(rows).where(rows.c.id == bindparam("row_id"), rows.c.state == "new").values(state=bindparam("to")),
    ["row_id", "to"],
)


def test_one_row_and_many_rows_land_and_the_statements_own_values_are_bound(engine: Engine) -> None:
    with engine.begin() as connection:
        assert INSERT.execute(connection, {"id": 1, "name": "one", "state": "new"}).rowcount == 1
        INSERT.execute(connection, [{"id": n, "name": f"n{n}", "state": "new"} for n in range(2, 6)])
    with engine.begin() as connection:
        assert ADVANCE.execute(connection, {"row_id": 1, "to": "done"}).rowcount == 1
        assert ADVANCE.execute(connection, {"row_id": 1, "to": "again"}).rowcount == 0  # no longer "new"
        assert ADVANCE.execute(connection, [{"row_id": n, "to": "done"} for n in (2, 3)]).rowcount == 2
    with engine.connect() as connection:
        states = dict(connection.execute(select(rows.c.id, rows.c.state)).all())
    assert states == {1: "done", 2: "done", 3: "done", 4: "new", 5: "new"}


def test_it_runs_in_the_callers_transaction(engine: Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as connection:
        INSERT.execute(connection, {"id": 7, "name": "rolled back", "state": "new"})
        raise RuntimeError
    with engine.connect() as connection:
        assert connection.execute(select(rows.c.id)).all() == []


def test_values_that_need_converting_or_a_list_to_expand_go_through_sqlalchemy(engine: Engine) -> None:
    dated = Prepared(insert(rows), ["id", "name", "state", "day"])  # a Date is converted on its way (SQLite)
    listed = Prepared(update(rows).where(rows.c.id.in_(bindparam("ids", expanding=True))).values(state="x"), ["ids"])
    with engine.begin() as connection:
        dated.execute(connection, {"id": 1, "name": "d", "state": "new", "day": datetime.date(2026, 1, 2)})
        INSERT.execute(connection, {"id": 2, "name": "e", "state": "new"})
        assert listed.execute(connection, {"ids": [1, 2]}).rowcount == 2
    with engine.connect() as connection:
        found = connection.execute(select(rows.c.day, rows.c.state).where(rows.c.id == 1)).one()
    assert tuple(found) == (datetime.date(2026, 1, 2), "x")
