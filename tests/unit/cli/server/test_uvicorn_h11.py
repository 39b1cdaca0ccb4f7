"""The fence around uvicorn's private H11Protocol (app/cli/server/uvicorn_h11.py): if an upgrade moves the
class, changes ``connection_made`` or stops reading ``self.app`` per request, these tests say so plainly,
instead of certificate logins silently turning into 401s; likewise for the hooks the limits rely on (flow
control, the h11 connection, the 400 response, the cap). Driven through a real H11Protocol on an in-memory
transport."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from app.cli.server.connection_slots import ListenerSlots
from app.cli.server.tls import server_context
from app.cli.server.uvicorn_h11 import TlsAwareH11Protocol, limited_protocol
from tests.tls_material import CertificateAuthority

ADAPTER = "app/cli/server/uvicorn_h11.py"
CHANGED = f"uvicorn {uvicorn.__version__} changed what {ADAPTER} relies on"
REQUEST = b"GET /whoami HTTP/1.1\r\nHost: kts.test\r\n\r\n"


class PeerCertificate:
    """The ``ssl_object`` of a TLS connection whose client presented ``der``."""

    def __init__(self, der: bytes) -> None:
        self.der = der

    def getpeercert(self, binary_form: bool = False) -> bytes:
        assert binary_form
        return self.der


class MemoryTransport(asyncio.Transport):
    def __init__(self, ssl_object: PeerCertificate | None) -> None:
        super().__init__()
        self.ssl_object = ssl_object
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        extra = {"ssl_object": self.ssl_object, "sslcontext": ssl.create_default_context() if self.ssl_object else None}
        return extra.get(name, default)

    unsent = 0  # what get_write_buffer_size reports: bytes the client has not taken
    aborted = False
    protocol: Any = None  # told of an abort

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def get_write_buffer_size(self) -> int:
        return self.unsent

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        """As a real transport: closed at once, and the protocol told so (which ends a wait for the drain)."""
        self.aborted = self.closed = True
        if self.protocol is not None:
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class RecordingApp:
    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


def serve_one_request(app: RecordingApp, ssl_object: PeerCertificate | None) -> tuple[TlsAwareH11Protocol, bytes]:
    async def exchange() -> tuple[TlsAwareH11Protocol, bytes]:
        config = uvicorn.Config(app, http=TlsAwareH11Protocol, proxy_headers=False, log_config=None)
        protocol = TlsAwareH11Protocol(config, ServerState(), {}, _loop=asyncio.get_running_loop())
        transport = MemoryTransport(ssl_object)
        protocol.connection_made(transport)
        protocol.data_received(REQUEST)
        async with asyncio.timeout(10):
            while b"\r\n\r\nok" not in transport.written:
                await asyncio.sleep(0.01)
        protocol.connection_lost(None)
        return protocol, transport.written

    return asyncio.run(exchange())


@pytest.fixture(scope="module")
def client_der(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    pair = CertificateAuthority(tmp_path_factory.mktemp("ca")).issue("client", CN="svc-spark", O="acme")
    return ssl.PEM_cert_to_DER_cert(Path(pair.cert).read_text())


def test_the_private_class_is_where_the_adapter_imports_it_from() -> None:
    module = importlib.import_module("uvicorn.protocols.http.h11_impl")
    assert getattr(module, "H11Protocol", None) is TlsAwareH11Protocol.__mro__[1], (
        f"{CHANGED}: uvicorn.protocols.http.h11_impl.H11Protocol is gone or moved"
    )


def test_connection_made_still_takes_the_transport_alone() -> None:
    base = TlsAwareH11Protocol.__mro__[1]
    parameters = list(inspect.signature(base.connection_made).parameters)
    assert parameters == ["self", "transport"], f"{CHANGED}: H11Protocol.connection_made{parameters}"
    assert "connection_made" in vars(base), f"{CHANGED}: H11Protocol no longer defines connection_made"


def test_the_app_attribute_is_set_at_construction_and_read_for_each_request(client_der: bytes) -> None:
    app = RecordingApp()
    protocol, response = serve_one_request(app, PeerCertificate(client_der))
    assert response.startswith(b"HTTP/1.1 200"), f"{CHANGED}: the request was not served ({response[:80]!r})"
    assert type(protocol.app).__name__ == "WithTlsExtension", f"{CHANGED}: H11Protocol has no app attribute"
    (scope,) = app.scopes
    tls = scope.get("extensions", {}).get("tls")
    assert tls is not None, f"{CHANGED}: H11Protocol no longer reads self.app per request"
    assert tls["client_cert_chain"] == [ssl.DER_cert_to_PEM_cert(client_der)]


def test_a_plain_connection_reaches_the_app_untouched() -> None:
    app = RecordingApp()
    protocol, response = serve_one_request(app, None)
    assert response.startswith(b"HTTP/1.1 200")
    assert protocol.app is protocol.config.loaded_app
    assert "tls" not in app.scopes[0].get("extensions", {})


def test_the_server_still_says_whether_it_started() -> None:
    """app/cli/server/serve.py exits 1 when ``Server.started`` stays False (the listener could not bind)."""
    server = uvicorn.Server(uvicorn.Config(RecordingApp()))
    assert server.started is False, f"{CHANGED}: uvicorn.Server has no started flag"


def test_the_limited_protocol_serves_a_whole_request_and_cuts_off_a_partial_one() -> None:
    """What LimitedH11Protocol relies on besides its base: ``data_received``, ``connection_lost``, ``loop``,
    ``client`` and h11's ``conn.their_state`` reaching DONE once a request is read."""
    protocol_class = limited_protocol(request_timeout_s=0.2, slots=ListenerSlots(per_address=1, total=None))

    async def exchange() -> tuple[bytes, bool]:
        app = RecordingApp()
        config = uvicorn.Config(app, http=protocol_class, proxy_headers=False, log_config=None)
        loop = asyncio.get_running_loop()
        whole = protocol_class(config, ServerState(), {}, _loop=loop)
        served = MemoryTransport(None)
        whole.connection_made(served)
        whole.data_received(REQUEST)
        async with asyncio.timeout(10):
            while b"\r\n\r\nok" not in served.written:
                await asyncio.sleep(0.01)
        whole.connection_lost(None)

        partial = protocol_class(config, ServerState(), {}, _loop=loop)
        slow = MemoryTransport(None)
        partial.connection_made(slow)
        partial.data_received(REQUEST[:10])
        async with asyncio.timeout(10):
            while not slow.closed:
                await asyncio.sleep(0.01)
        return served.written, slow.closed

    written, slow_closed = asyncio.run(exchange())
    assert written.startswith(b"HTTP/1.1 200"), f"{CHANGED}: a whole request was not served ({written[:80]!r})"
    assert slow_closed
    assert "data_received" in vars(TlsAwareH11Protocol.__mro__[1]), f"{CHANGED}: no data_received"
    assert "connection_lost" in vars(TlsAwareH11Protocol.__mro__[1]), f"{CHANGED}: no connection_lost"


def _limited(**limits: Any) -> tuple[type[Any], uvicorn.Config]:
    protocol_class = limited_protocol(
        request_timeout_s=limits.pop("request_timeout_s", 0.2),
        slots=ListenerSlots(per_address=10, total=None),
        **limits,
    )
    config = uvicorn.Config(RecordingApp(), http=protocol_class, proxy_headers=False, log_config=None)
    return protocol_class, config


def test_writes_that_do_not_drain_cut_the_connection_off() -> None:
    """``pause_writing`` (the transport's write buffer over its high-water mark) starts a deadline; a client that
    has not taken the bytes by then is aborted (a graceful close would wait for the buffer); ``resume_writing``
    in time stops it. Relies on uvicorn's ``flow`` (``write_paused``) and the transport's ``abort``."""
    protocol_class, config = _limited()

    async def exchange() -> tuple[MemoryTransport, MemoryTransport]:
        loop = asyncio.get_running_loop()
        stuck_protocol = protocol_class(config, ServerState(), {}, _loop=loop)
        stuck = MemoryTransport(None)
        stuck.protocol = stuck_protocol
        stuck_protocol.connection_made(stuck)
        stuck_protocol.data_received(REQUEST)
        stuck.unsent = 1 << 20
        stuck_protocol.pause_writing()
        assert stuck_protocol.flow.write_paused, f"{CHANGED}: H11Protocol.pause_writing no longer pauses its flow"
        reading_protocol = protocol_class(config, ServerState(), {}, _loop=loop)
        reading = MemoryTransport(None)
        reading_protocol.connection_made(reading)
        reading_protocol.data_received(REQUEST)
        reading_protocol.pause_writing()
        reading_protocol.resume_writing()
        async with asyncio.timeout(10):
            while not stuck.aborted:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.4)  # twice the deadline: the reading client is still connected
        return stuck, reading

    stuck, reading = asyncio.run(exchange())
    assert stuck.aborted
    assert not reading.aborted and not reading.closed


def test_a_close_waiting_for_unread_bytes_is_cut_off() -> None:
    """An idle kept-alive connection whose last response still sits unread: uvicorn's keep-alive close would wait
    for the buffer to drain for ever; the deadline aborts it. Relies on ``timeout_keep_alive_handler``."""
    protocol_class, config = _limited()

    async def exchange() -> MemoryTransport:
        protocol = protocol_class(config, ServerState(), {}, _loop=asyncio.get_running_loop())
        transport = MemoryTransport(None)
        transport.protocol = protocol
        protocol.connection_made(transport)
        protocol.data_received(REQUEST)
        async with asyncio.timeout(10):
            while b"\r\n\r\nok" not in transport.written:
                await asyncio.sleep(0.01)
        transport.unsent = 100
        protocol.timeout_keep_alive_handler()
        assert transport.closed, f"{CHANGED}: timeout_keep_alive_handler no longer closes the connection"
        async with asyncio.timeout(10):
            while not transport.aborted:
                await asyncio.sleep(0.01)
        return transport

    assert asyncio.run(exchange()).aborted


@pytest.mark.parametrize("chunk", [64 * 1024, 512], ids=["one-read", "many-reads"])
def test_a_header_block_over_16_kib_is_answered_431_with_the_envelope(chunk: int) -> None:
    """h11 bounds only an incomplete header block; the adapter replaces ``conn`` with a subclass that bounds
    whole ones too, and ``send_400_response`` answers with the error envelope."""
    protocol_class, _ = _limited()
    request = b"GET /x HTTP/1.1\r\nHost: kts\r\n" + b"X-Pad: " + b"a" * 20_000 + b"\r\n\r\n"

    async def exchange() -> MemoryTransport:
        app = RecordingApp()
        protocol = protocol_class(
            uvicorn.Config(app, http=protocol_class, proxy_headers=False, log_config=None),
            ServerState(),
            {},
            _loop=asyncio.get_running_loop(),
        )
        transport = MemoryTransport(None)
        protocol.connection_made(transport)
        for start in range(0, len(request), chunk):
            if transport.closed:
                break
            protocol.data_received(request[start : start + chunk])
        await asyncio.sleep(0.05)
        assert app.scopes == [], "served"
        return transport

    transport = asyncio.run(exchange())
    head, _, body = transport.written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), head[:80]
    assert b"content-type: application/json" in head and b"connection: close" in head
    assert json.loads(body)["error"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"
    assert transport.closed


def test_trailer_fields_over_16_kib_close_the_connection_while_the_request_is_in_progress() -> None:
    """A chunked body's trailer block counts as a header block too; the app is already answering that request,
    so the connection is closed without a second response."""
    protocol_class, config = _limited()
    trailer = b"X-Trailer: " + b"a" * 20_000 + b"\r\n\r\n"
    request = b"POST /x HTTP/1.1\r\nHost: kts\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + trailer

    async def exchange() -> MemoryTransport:
        protocol = protocol_class(config, ServerState(), {}, _loop=asyncio.get_running_loop())
        transport = MemoryTransport(None)
        protocol.connection_made(transport)
        protocol.data_received(request)
        return transport

    transport = asyncio.run(exchange())
    assert transport.closed
    assert b"431" not in transport.written.split(b"\r\n", 1)[0]


def test_a_request_h11_cannot_parse_gets_a_400_envelope() -> None:
    protocol_class, config = _limited()

    async def exchange() -> MemoryTransport:
        protocol = protocol_class(config, ServerState(), {}, _loop=asyncio.get_running_loop())
        transport = MemoryTransport(None)
        protocol.connection_made(transport)
        protocol.data_received(b"GET / HTTP/1.1\r\nHost kts\r\n\r\n")
        return transport

    transport = asyncio.run(exchange())
    head, _, body = transport.written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request")
    assert json.loads(body) == {"error": "BAD_REQUEST", "message": "The request is not valid HTTP/1.1."}
    assert transport.closed


def test_over_the_cap_a_request_gets_503_with_the_envelope() -> None:
    """In place of uvicorn's ``limit_concurrency`` (a bare-text 503): relies on ``connections`` and ``tasks`` of
    the server state, shared by every connection of one server."""
    protocol_class, config = _limited(max_connections=1)

    async def exchange() -> tuple[MemoryTransport, MemoryTransport]:
        state, loop = ServerState(), asyncio.get_running_loop()
        first_protocol = protocol_class(config, state, {}, _loop=loop)
        first = MemoryTransport(None)
        first_protocol.connection_made(first)
        first_protocol.data_received(REQUEST)
        async with asyncio.timeout(10):
            while b"\r\n\r\nok" not in first.written:
                await asyncio.sleep(0.01)
        second_protocol = protocol_class(config, state, {}, _loop=loop)
        second = MemoryTransport(None)
        second_protocol.connection_made(second)  # two open, cap one
        second_protocol.data_received(REQUEST)
        async with asyncio.timeout(10):
            while not second.closed:
                await asyncio.sleep(0.01)
        return first, second

    first, second = asyncio.run(exchange())
    assert first.written.startswith(b"HTTP/1.1 200")
    head, _, body = second.written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503"), head[:80]
    assert b"retry-after: 2" in head and b"connection: close" in head
    assert json.loads(body)["error"] == "TOO_MANY_CONNECTIONS"


def test_the_hooks_the_limits_override_are_still_the_base_class_s() -> None:
    base = TlsAwareH11Protocol.__mro__[1]
    for name in (
        "on_response_complete",
        "pause_writing",
        "resume_writing",
        "timeout_keep_alive_handler",
        "shutdown",
        "send_400_response",
        "handle_events",
    ):
        assert name in vars(base), f"{CHANGED}: H11Protocol no longer defines {name}"


class TlsListener:
    """A real listening socket, bound at once, served by a LimitedH11Protocol with TLS on the event loop named
    (uvicorn's ``loop=``) in a thread once ``start`` is called."""

    def __init__(self, tmp_path: Path, loop_name: str, handshake_timeout_s: float = 30.0) -> None:
        ca = CertificateAuthority(tmp_path)
        pair = ca.issue("server", server=True, CN="localhost")
        self.client_context = ssl.create_default_context(cafile=str(ca.path))
        self.protocol_class = limited_protocol(
            request_timeout_s=30,
            slots=ListenerSlots(per_address=2, total=None),
            tls=server_context(str(pair.cert), str(pair.key), None, ssl.CERT_NONE),
            tls_handshake_timeout_s=handshake_timeout_s,
        )
        self.config = uvicorn.Config(
            RecordingApp(), http=self.protocol_class, proxy_headers=False, log_config=None, loop=loop_name
        )
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self._ready, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(30)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _serve(self) -> None:
        async def main() -> None:
            loop, state = asyncio.get_running_loop(), ServerState()
            server = await loop.create_server(
                lambda: self.protocol_class(self.config, state, {}, _loop=loop), sock=self.socket
            )
            self._ready.set()
            while not self._stop.is_set():
                await asyncio.sleep(0.01)
            server.close()

        with asyncio.Runner(loop_factory=self.config.get_loop_factory()) as runner:
            runner.run(main())

    def request(self) -> bytes:
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=30) as raw,
            self.client_context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(REQUEST)
            return tls.recv(4096)


@pytest.fixture(params=["asyncio", "uvloop"])
def tls_listener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TlsListener]:
    listener = TlsListener(tmp_path, request.param)
    yield listener
    listener.stop()


def _exchange_over(raw: socket.socket, tls: ssl.SSLObject, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO) -> bytes:
    """Finish the handshake ``tls`` began, send REQUEST and return the response's first bytes."""
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            raw.sendall(outgoing.read())
            data = raw.recv(65536)
            assert data, "the server closed the connection during the handshake"
            incoming.write(data)
    tls.write(REQUEST)
    raw.sendall(outgoing.read())
    while True:
        try:
            return tls.read(4096)
        except ssl.SSLWantReadError:
            incoming.write(raw.recv(65536))


def test_tls_is_done_by_the_protocol_once_the_connection_is_counted(tls_listener: TlsListener) -> None:
    """A ClientHello already waiting when the server accepts (the event loop reads it at once: uvloop does as soon
    as connection_made returns) reaches the handshake, not the HTTP parser; over the per-address share a connection
    is closed on arrival, without a handshake; clients that leave mid-handshake give their slots back. Relies on
    ``loop.start_tls`` putting its protocol on the transport in its first step."""
    early = socket.create_connection(("127.0.0.1", tls_listener.port), timeout=30)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = tls_listener.client_context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    early.sendall(outgoing.read())  # the ClientHello, before the server runs at all
    tls_listener.start()
    with early:
        assert _exchange_over(early, tls, incoming, outgoing).startswith(b"HTTP/1.1 200"), f"{CHANGED}: start_tls"

    held = [socket.create_connection(("127.0.0.1", tls_listener.port), timeout=30) for _ in range(2)]
    over = socket.create_connection(("127.0.0.1", tls_listener.port), timeout=30)
    over.sendall(b"\x16\x03\x01")  # the start of a ClientHello: no answer comes
    try:
        assert over.recv(1) == b"", "the connection over the share was answered"
    except ConnectionResetError:
        pass  # closed on arrival, as it should be
    for sock in [*held, over]:
        sock.close()
    deadline = time.monotonic() + 30
    while True:  # both slots come back once the silent clients leave
        try:
            assert tls_listener.request().startswith(b"HTTP/1.1 200")
            break
        except (OSError, ssl.SSLError):
            assert time.monotonic() < deadline, "the slots of clients that left mid-handshake were not given back"
            time.sleep(0.05)


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_a_handshake_not_finished_in_time_is_closed_and_its_slot_given_back(tmp_path: Path, loop_name: str) -> None:
    listener = TlsListener(tmp_path, loop_name, handshake_timeout_s=0.3)
    listener.start()
    try:
        silent = [socket.create_connection(("127.0.0.1", listener.port), timeout=30) for _ in range(2)]  # the share
        for sock in silent:  # the server closes them: recv sees the end, not the 30 s timeout
            try:
                assert sock.recv(1) == b""
            except ConnectionResetError:
                pass
        # The slots are free again. On a loaded machine this request's own handshake can outlast the 0.3 s too and
        # be closed like the silent ones: that says nothing of the slots, so it tries again (with the slots kept,
        # every try would be refused until the deadline).
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = listener.request()
                break
            except (ConnectionError, ssl.SSLError):
                assert time.monotonic() < deadline, "the slots of timed-out handshakes were not given back"
        assert answer.startswith(b"HTTP/1.1 200")
        for sock in silent:
            sock.close()
    finally:
        listener.stop()
