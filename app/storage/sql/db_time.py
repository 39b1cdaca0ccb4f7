"""The database's own clock, in milliseconds since the epoch, as a SQL expression.

Leases, replica heartbeats and lock ends are compared against this clock, never against a replica's: two
replicas whose clocks disagree by seconds still agree on who leads and until when an account is locked.
PostgreSQL's ``clock_timestamp()`` is the time at the statement (``now()`` would be the transaction's start);
SQLite's ``'now'`` is the host's clock, which is the one clock when one replica uses the file.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Connection, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import FunctionElement


class db_now_ms(FunctionElement[int]):  # lower case: it reads like the SQL function it is
    type = BigInteger()
    inherit_cache = True
    name = "db_now_ms"


@compiles(db_now_ms, "postgresql")
def _postgresql(_element: db_now_ms, _compiler: Any, **_kw: Any) -> str:
    return "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)"


@compiles(db_now_ms, "sqlite")
def _sqlite(_element: db_now_ms, _compiler: Any, **_kw: Any) -> str:
    return "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"


def read_now_ms(connection: Connection) -> int:
    """The database's clock now."""
    return int(connection.execute(select(db_now_ms())).scalar_one())
