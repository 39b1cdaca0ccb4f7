"""The one place kts uses uvicorn's private API: its h11 HTTP protocol class, subclassed.

Why: uvicorn verifies TLS client certificates but gives the app no way to learn them (no ASGI TLS
extension, no public hook per connection), and kts maps the certificate to the caller's principal. The
subclass reads the verified peer certificate when a connection is made and wraps the app for that
connection in ``tls.WithTlsExtension``. What it relies on, checked by tests/unit/cli/server/test_uvicorn_h11.py
so that an upgrade fails loudly instead of silently dropping certificate logins:

- the class ``uvicorn.protocols.http.h11_impl.H11Protocol``, built once per connection;
- its ``connection_made(transport)``, called before any request of the connection;
- its ``app`` attribute, set in ``__init__`` and read for each request.

pyproject.toml bounds uvicorn below the next minor version for the same reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.cli.server.tls import WithTlsExtension, tls_facts
from app.domain.throttle import address_group

log = logging.getLogger("app.cli.serve")


class TlsAwareH11Protocol(H11Protocol):
    """uvicorn's ``http=`` protocol for the https listener."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        facts = tls_facts(transport)
        if facts is not None:
            self.app = WithTlsExtension(self.app, facts)


class LimitedH11Protocol(TlsAwareH11Protocol):
    """uvicorn's ``http=`` protocol for every listener: a slow client cannot hold a connection, nor many.

    - A connection must deliver a whole request (headers and body) within ``request_timeout_s`` of opening,
      or of the first byte of its next request: uvicorn itself times out only idle kept-alive connections,
      so a client sending headers a byte at a time held its connection for ever.
    - At most ``max_connections_per_address`` connections per client address (an IPv6 address as its /64)
      are open at once; more are closed on arrival, so one client cannot take every slot of uvicorn's
      ``limit_concurrency``.

    Made per server by ``limited_protocol``; relies on the same private API as its base, plus
    ``data_received``/``connection_lost`` and h11's ``conn.their_state``.
    """

    request_timeout_s: ClassVar[float] = 10.0
    max_connections_per_address: ClassVar[int] = 100
    open_connections: ClassVar[Counter[str]] = Counter()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._read_timer: asyncio.TimerHandle | None = None
        self._address = address_group(self.client[0]) if self.client else ""
        self._counted = False
        if self.open_connections[self._address] >= self.max_connections_per_address:
            log.warning("refused a connection: %d are open from %s", self.max_connections_per_address, self._address)
            transport.close()
            return
        self.open_connections[self._address] += 1
        self._counted = True
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._read_timer is None and self.conn.their_state not in _REQUEST_READ:
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state in _REQUEST_READ:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._counted:
            self._counted = False
            self.open_connections[self._address] -= 1
            if self.open_connections[self._address] <= 0:
                del self.open_connections[self._address]
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(self.request_timeout_s, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.conn.their_state in _REQUEST_READ or self.transport.is_closing():
            return
        log.info("closed a connection from %s: no complete request within %s s", self._address, self.request_timeout_s)
        self.transport.close()


# The client has sent a whole request (or is done with the connection): nothing more to wait for.
_REQUEST_READ = frozenset({h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR})


def limited_protocol(*, request_timeout_s: float, max_connections_per_address: int) -> type[LimitedH11Protocol]:
    """A ``LimitedH11Protocol`` with these limits and its own count of open connections."""
    return type(
        "LimitedH11Protocol",
        (LimitedH11Protocol,),
        {
            "request_timeout_s": request_timeout_s,
            "max_connections_per_address": max_connections_per_address,
            "open_connections": Counter(),
        },
    )
