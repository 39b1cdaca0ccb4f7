"""The fence around uvicorn's private H11Protocol (app/cli/server/uvicorn_h11.py): if an upgrade moves the
class, changes ``connection_made`` or stops reading ``self.app`` per request, these tests say so plainly,
instead of certificate logins silently turning into 401s. Driven through a real H11Protocol on an
in-memory transport."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import ssl
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

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

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closed = True

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
    protocol_class = limited_protocol(request_timeout_s=0.2, max_connections_per_address=1)

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
