"""The one place kts uses uvicorn's private API: its h11 HTTP protocol class, subclassed.

Why: uvicorn gives the app no way to learn a TLS client certificate (no ASGI TLS extension, no public hook per
connection), and kts maps the certificate to the caller's principal; uvicorn bounds neither a slow request, nor a
client that does not read its responses, nor a header block that arrives whole; and with its ``ssl`` options the
protocol sees a connection only once its TLS handshake is done, so silent connections escaped every cap (kts does
the handshake here instead, with ``loop.start_tls``). What it relies on, checked by
tests/unit/cli/server/test_uvicorn_h11.py so that an upgrade fails loudly instead of silently dropping
certificate logins or a limit:

- the class ``uvicorn.protocols.http.h11_impl.H11Protocol``, built once per connection;
- its ``connection_made(transport)``, called before any request of the connection;
- its ``app`` attribute, set in ``__init__`` and read for each request; its ``conn`` (the h11 connection),
  read for each event; ``send_400_response``, called when h11 refuses what the client sent; ``cycle`` (the
  request in progress, with ``response_complete``);
- ``data_received``, ``connection_lost``, ``on_response_complete``, ``timeout_keep_alive_handler``,
  ``shutdown``, ``pause_writing`` and ``resume_writing``; the attributes ``loop``, ``client``, ``transport``,
  ``connections`` and ``tasks``; ``uvicorn.protocols.utils.get_remote_addr``;
- of the event loops (asyncio's and uvloop's), that the first step of ``start_tls`` puts its TLS protocol on the
  transport (see ``LimitedH11Protocol._start_tls``).

pyproject.toml bounds uvicorn below the next minor version for the same reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Any, ClassVar

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import get_remote_addr

from app.api.error_body import RETRY_AFTER_SECONDS, error_body
from app.api.limits import MAX_HEADER_BYTES
from app.api.security_headers import API_POLICY, SecurityHeaders, security_headers
from app.cli.server.connection_slots import ListenerSlots
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

    - Every connection counts towards the listener's ``slots`` from the moment it is accepted: at most
      ``slots.per_address`` from one client address (an IPv6 address as its /64) and ``slots.total`` in all. More
      are closed on arrival (``abort``: no handshake, no lingering), so one client cannot take every slot, nor a
      flood every file descriptor of the process.
    - On an https listener (``tls``) kts does the TLS handshake itself, after that count (uvicorn is given no
      ``ssl``: asyncio's own TLS path calls ``connection_made`` only once the handshake is done, so silent
      connections held no slot at all), within ``tls_handshake_timeout_s`` of the accept.
    - A connection must deliver a whole request (headers and body) within ``request_timeout_s`` of opening,
      or of the first byte of its next request (a pipelined one included): uvicorn itself times out only idle
      kept-alive connections, so a client sending headers a byte at a time held its connection for ever.
    - What the server writes must be taken by the client within ``request_timeout_s``: when the transport's
      write buffer stops draining (``pause_writing``, until ``resume_writing``), and when the connection is
      being closed (a graceful close waits for the buffer to drain), a deadline starts; a connection still
      paused, or still not gone, by then is cut off (``abort``). Otherwise a client that pipelines requests and
      never reads held its connection with no traffic at all, as uvicorn awaits the drain and neither of its
      timers runs meanwhile; and one whose last response sat unread was never gone after its keep-alive close.
    - With ``max_connections``, while the listener holds more connections (or requests in progress) than that,
      requests are answered 503 with the error envelope and ``Connection: close`` (in place of uvicorn's
      ``limit_concurrency``, whose 503 is bare text).
    - The request line and header fields are at most ``MAX_HEADER_BYTES``, however they arrive: more is
      answered 431 and the connection closed. Requests h11 cannot parse get a 400 with the error envelope.

    Made per server by ``limited_protocol``.
    """

    request_timeout_s: ClassVar[float] = 10.0
    max_connections: ClassVar[int | None] = None
    slots: ClassVar[ListenerSlots] = ListenerSlots(per_address=100, total=None)
    tls: ClassVar[ssl.SSLContext | None] = None
    tls_handshake_timeout_s: ClassVar[float] = 5.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Called at accept, on every listener (uvicorn's server has no ``ssl``: see the class)."""
        self._read_timer: asyncio.TimerHandle | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._lost = False
        self._begun = False
        peer = get_remote_addr(transport)
        self._address = address_group(peer[0]) if peer else ""
        refusal = self.slots.take(self._address)
        self._counted = refusal is None
        if refusal is not None:
            log.warning("refused a connection: %s", refusal)
            transport.abort()  # connection_lost follows
        elif self.tls is None:
            self._begin(transport)
        else:
            self._start_tls(transport)

    def _start_tls(self, transport: asyncio.Transport) -> None:
        """Begin the TLS handshake; the HTTP protocol takes the connection over once it is done.

        ``loop.start_tls`` is a coroutine whose first step puts its TLS protocol on the transport. That step runs
        here, inside ``connection_made``, rather than in a task's first turn of the loop: uvloop starts reading a
        new connection as soon as ``connection_made`` returns (a ``pause_reading`` there is ignored), and a
        ClientHello read before the TLS protocol is in place would reach this HTTP protocol instead. The TLS
        protocol keeps what it reads before its own ``connection_made`` for the handshake."""
        assert self.tls is not None
        handover = _UntilBegun()
        handshake = self.loop.start_tls(
            transport, handover, self.tls, server_side=True, ssl_handshake_timeout=self.tls_handshake_timeout_s
        )
        try:
            waiting = handshake.send(None)  # to its wait for the end of the handshake
        except Exception as exc:  # a transport start_tls does not take: nothing was put on it
            log.warning("closed a connection from %s: cannot start TLS: %s", self._address, exc)
            transport.abort()  # connection_lost follows
            return
        self._handshake = self.loop.create_task(self._finish_tls(handshake, waiting, handover))

    async def _finish_tls(
        self, handshake: Coroutine[Any, Any, asyncio.Transport | None], waiting: object, handover: _UntilBegun
    ) -> None:
        """The rest of ``start_tls``; a handshake that fails, times out or loses its client gives the slot back
        (start_tls has closed the transport)."""
        tls_transport: asyncio.Transport | None = None
        try:
            tls_transport = await _resume(handshake, waiting)
        except Exception as exc:  # whatever ended the handshake: the client gets no more
            log.info("closed a connection from %s: TLS handshake failed: %s", self._address, exc)
        finally:
            if tls_transport is None or tls_transport.is_closing():  # failed, or the client has gone already
                handshake.close()  # after a cancelled wait (the server's shutdown) start_tls closes the transport
                self.connection_lost(None)
        if not self._lost and tls_transport is not None:
            tls_transport.set_protocol(self)
            self._begin(tls_transport)
            handover.replay(self)

    def _begin(self, transport: asyncio.Transport) -> None:
        """The HTTP protocol's start on a counted connection (after the TLS handshake on an https listener)."""
        self._begun = True
        super().connection_made(transport)
        self.conn = HeaderLimitedConnection(MAX_HEADER_BYTES)
        if self.max_connections is not None:
            self.app = ConnectionCap(self.app, self._over_capacity, self.max_connections)
        self._arm_read()

    def data_received(self, data: bytes) -> None:
        if self._read_timer is None and self.conn.their_state not in _REQUEST_READ:
            self._arm_read()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state in _REQUEST_READ:
            self._disarm_read()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start the next, pipelined, request from bytes already read
        if self._lost:
            return
        if self.transport.is_closing():
            self._watch_drain()  # a response with Connection: close, perhaps not all taken by the client yet
        elif self.conn.their_state is h11.SEND_BODY and self._read_timer is None:
            self._arm_read()  # a pipelined request whose body has not all arrived: no data_received may follow

    def pause_writing(self) -> None:
        super().pause_writing()
        self._watch_drain()

    def resume_writing(self) -> None:
        super().resume_writing()
        if not self.transport.is_closing():  # a close still waits for the rest of the buffer
            self._cancel_drain()

    def timeout_keep_alive_handler(self) -> None:
        super().timeout_keep_alive_handler()
        self._watch_drain()

    def shutdown(self) -> None:
        super().shutdown()  # closes an idle connection: uvicorn's graceful shutdown waits until it is gone
        if self.transport.is_closing():
            self._watch_drain()

    def send_400_response(self, msg: str) -> None:
        """What uvicorn sends when h11 refuses the request: the error envelope, 431 for too long a header."""
        refusal = self.conn.refusal if isinstance(self.conn, HeaderLimitedConnection) else None
        if refusal is not None and refusal.error_status_hint == 431:
            message = f"The request line and header fields exceed {MAX_HEADER_BYTES} bytes."
            status, headers, body = _json(431, error_body("REQUEST_HEADER_FIELDS_TOO_LARGE", message))
        else:
            status, headers, body = _json(400, error_body("BAD_REQUEST", "The request is not valid HTTP/1.1."))
        log.info("refused a request from %s with %d: %s", self._address, status, refusal or msg)
        in_progress = self.cycle is not None and not self.cycle.response_complete  # refused trailer fields
        if not in_progress and self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):  # else the app answers: close
            headers += [
                *security_headers(self.scheme or "http", "/"),
                (b"content-security-policy", API_POLICY.encode()),
            ]
            for event in (
                h11.Response(status_code=status, headers=headers, reason=HTTPStatus(status).phrase),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        self.transport.close()
        self._watch_drain()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._disarm_read()
        self._cancel_drain()
        if self._counted:
            self._counted = False
            self.slots.give_back(self._address)
        if self._begun:
            super().connection_lost(exc)

    def _over_capacity(self) -> bool:
        """uvicorn's ``limit_concurrency`` rule, counting every accepted connection (a TLS handshake in progress
        too); the request asking is already one of ``tasks``."""
        cap = self.max_connections
        return cap is not None and (self.slots.held > cap or len(self.tasks) > cap)

    def _arm_read(self) -> None:
        self._disarm_read()
        self._read_timer = self.loop.call_later(self.request_timeout_s, self._read_timed_out)

    def _disarm_read(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.conn.their_state in _REQUEST_READ or self.transport.is_closing():
            return
        log.info("closed a connection from %s: no complete request within %s s", self._address, self.request_timeout_s)
        self.transport.close()
        self._watch_drain()

    def _watch_drain(self) -> None:
        """Start the deadline for the write buffer to drain (or the closing connection to be gone), unless it is
        running."""
        if self._drain_timer is None and not self._lost:
            self._drain_timer = self.loop.call_later(self.request_timeout_s, self._drain_timed_out)

    def _cancel_drain(self) -> None:
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None

    def _drain_timed_out(self) -> None:
        self._drain_timer = None
        if self._lost or not (self.flow.write_paused or self.transport.is_closing()):
            return
        unsent = self.transport.get_write_buffer_size()
        log.info(
            "closed a connection from %s: %d bytes of its responses unread for %s s",
            self._address,
            unsent,
            self.request_timeout_s,
        )
        self.transport.abort()


class HeaderLimitedConnection(h11.Connection):
    """h11's server side, refusing a header block over ``max_header_bytes`` even when it arrived whole (h11
    checks only incomplete ones), and keeping the last refusal for the error response."""

    def __init__(self, max_header_bytes: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_header_bytes)
        self.max_header_bytes = max_header_bytes
        self.refusal: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refusal = exc
            raise
        if header_block_bytes(event) > self.max_header_bytes:
            self.refusal = h11.RemoteProtocolError("header block too long", error_status_hint=431)
            raise self.refusal
        return event


def header_block_bytes(event: object) -> int:
    """The size of a request's line and header fields, or of a body's trailer fields, as sent (less any
    optional whitespace h11 stripped); 0 for other events."""
    if isinstance(event, h11.Request):
        line = len(event.method) + len(event.target) + len(b"  HTTP/1.1\r\n")
        return line + _fields_bytes(event.headers)
    if isinstance(event, h11.EndOfMessage):
        return _fields_bytes(event.headers)
    return 0


def _fields_bytes(headers: Any) -> int:
    return sum(len(name) + len(value) + len(b": \r\n") for name, value in headers) + len(b"\r\n")


class ConnectionCap:
    """The app of a connection on a listener with a connection cap: over it, 503 with the error envelope."""

    def __init__(self, app: ASGIApp, over_capacity: Callable[[], bool], cap: int) -> None:
        self._app = app
        self._over_capacity = over_capacity
        self._cap = cap
        self._refuse = SecurityHeaders(self._refusal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._over_capacity():
            log.warning("answering 503: more than %d connections or requests at once", self._cap)
            await self._refuse(scope, receive, send)
            return
        await self._app(scope, receive, send)

    async def _refusal(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = error_body(
            "TOO_MANY_CONNECTIONS",
            f"The server has more than {self._cap} connections or requests at once (http.max.connections); "
            "retry later.",
        )
        status, headers, encoded = _json(503, body, ((b"retry-after", RETRY_AFTER_SECONDS.encode()),))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": encoded})


def _json(
    status: int, body: dict[str, Any], extra: tuple[tuple[bytes, bytes], ...] = ()
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """A JSON error response that closes the connection (a refused client gives its slot back)."""
    encoded = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(encoded)).encode())]
    return status, [*headers, *extra, (b"connection", b"close")], encoded


# The client has sent a whole request (or is done with the connection): nothing more to wait for.
_REQUEST_READ = frozenset({h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR})


async def _resume(coroutine: Coroutine[Any, Any, Any], waiting: object) -> Any:
    """Run a coroutine whose first step was taken by hand (``waiting``: what that step yielded) to its end, as a
    task would have."""
    while True:
        if asyncio.isfuture(waiting):
            await asyncio.wait({waiting})
        else:
            await asyncio.sleep(0)
        try:
            waiting = coroutine.send(None)
        except StopIteration as done:
            return done.value


class _UntilBegun(asyncio.Protocol):
    """A TLS connection's protocol from the end of its handshake until ``LimitedH11Protocol`` takes it over:
    asyncio delivers what arrived with the last handshake message (often the first request) before ``start_tls``
    returns, so it is kept and handed on."""

    def __init__(self) -> None:
        self._received: list[bytes] = []
        self._lost: tuple[Exception | None] | None = None

    def data_received(self, data: bytes) -> None:
        self._received.append(data)

    def eof_received(self) -> None:
        """Nothing to do: uvicorn's own ``eof_received`` does nothing either (``connection_lost`` follows)."""

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = (exc,)

    def replay(self, protocol: asyncio.Protocol) -> None:
        for data in self._received:
            protocol.data_received(data)
        if self._lost is not None:
            protocol.connection_lost(*self._lost)


def limited_protocol(
    *,
    request_timeout_s: float,
    slots: ListenerSlots,
    max_connections: int | None = None,
    tls: ssl.SSLContext | None = None,
    tls_handshake_timeout_s: float = 5.0,
) -> type[LimitedH11Protocol]:
    """A ``LimitedH11Protocol`` with these limits, for one listener (``slots`` is its own count)."""
    return type(
        "LimitedH11Protocol",
        (LimitedH11Protocol,),
        {
            "request_timeout_s": request_timeout_s,
            "slots": slots,
            "max_connections": max_connections,
            "tls": tls,
            "tls_handshake_timeout_s": tls_handshake_timeout_s,
        },
    )
