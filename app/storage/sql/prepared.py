"""A Core statement compiled once per dialect and run as the driver's SQL (``exec_driver_sql``).

``Connection.execute`` of a Core statement pays, at every call, for its cache key (a walk of the statement: an
audit INSERT names 20 columns), the compiled-cache lookup, the parameters built again through the compiled
form, and the result set-up. The audit writes of a token create (the pending event, then its outcome) pay
that twice per request; run as the driver's SQL, compiled once, the two commits took about a third less CPU.
This is SQLAlchemy's own path for SQL it does not compile: the same connection, transaction, events and errors
(so ``translated_db_errors`` still maps them). Only for statements whose values need no conversion on their
way to the driver (strings, integers); any other falls back to ``Connection.execute``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, CursorResult, Dialect
from sqlalchemy.sql.expression import Executable


class _Form:
    """The statement in one dialect: its SQL, the values it binds by itself, and its parameters' order when
    the driver's parameters are positional (SQLite's ``?``)."""

    __slots__ = ("constants", "order", "sql")

    def __init__(self, sql: str, constants: dict[str, Any], order: tuple[str, ...] | None) -> None:
        self.sql = sql
        self.constants = constants
        self.order = order

    def parameters(self, row: dict[str, Any]) -> dict[str, Any] | tuple[Any, ...]:
        values = self.constants | row if self.constants else row
        return values if self.order is None else tuple([values[key] for key in self.order])


class Prepared:
    """``statement``, run with rows whose keys are ``keys`` (each row gives every one of them)."""

    def __init__(self, statement: Executable, keys: Sequence[str]) -> None:
        self._statement = statement
        self._keys = tuple(keys)
        self._forms: dict[Dialect, _Form | None] = {}

    def execute(self, connection: Connection, rows: dict[str, Any] | list[dict[str, Any]]) -> CursorResult[Any]:
        """One row (``execute``) or several (the driver's ``executemany``)."""
        dialect = connection.dialect
        form = self._forms[dialect] if dialect in self._forms else self._prepare(dialect)
        if form is None:
            return connection.execute(self._statement, rows)
        if isinstance(rows, dict):
            return connection.exec_driver_sql(form.sql, form.parameters(rows))
        return connection.exec_driver_sql(form.sql, [form.parameters(row) for row in rows])

    def _prepare(self, dialect: Dialect) -> _Form | None:
        compiled = self._statement.compile(dialect=dialect, column_keys=list(self._keys))  # type: ignore[attr-defined]
        converted = any(bind.type.bind_processor(dialect) is not None for bind in compiled.binds.values())
        expanding = any(bind.expanding for bind in compiled.binds.values())
        form = None
        if not converted and not expanding and not compiled.returning:
            # The values the statement binds itself (``outcome = 'pending'``): every key not given by a row.
            constants = {key: bind.effective_value for key, bind in compiled.binds.items() if key not in self._keys}
            order = tuple(compiled.positiontup) if compiled.positional else None
            form = _Form(compiled.string, constants, order)
        self._forms[dialect] = form
        return form
