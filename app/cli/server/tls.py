"""The HTTPS listener under uvicorn: a hardened TLS policy, and an HTTP protocol that hands the TLS client
certificate to the app (the ASGI TLS extension).

Policy: TLS 1.2 or later; for TLS 1.2 only forward-secret AEAD suites (ECDHE with AES-GCM or
ChaCha20-Poly1305), for TLS 1.3 OpenSSL's defaults (all AEAD); no renegotiation, no compression. This is
Mozilla's "intermediate" profile without DHE, which every supported Java and librdkafka client speaks.

uvicorn verifies client certificates but does not put them in the ASGI scope, so the app could not
know who connected. These subclasses read the verified peer certificate once per connection and add
``scope["extensions"]["tls"]`` (``client_cert_chain``: PEM strings, leaf first; ``client_cert_error``)
to every request on it, as the ASGI TLS extension specifies. Pass one as uvicorn's ``http=`` class.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

MINIMUM_TLS_VERSION = ssl.TLSVersion.TLSv1_2
# OpenSSL cipher string for TLS 1.2 (TLS 1.3 suites are configured apart and keep their secure defaults).
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL"


def harden(context: ssl.SSLContext) -> ssl.SSLContext:
    """Apply the policy above to a server context (uvicorn builds it from the ``ssl_*`` options)."""
    context.minimum_version = MINIMUM_TLS_VERSION
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION
    return context


class _WithTlsExtension:
    """Wraps the app for one connection, adding that connection's TLS facts to each scope."""

    def __init__(self, app: ASGIApp, tls: dict[str, Any]) -> None:
        self._app = app
        self._tls = tls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = dict(scope)
            scope["extensions"] = {**scope.get("extensions", {}), "tls": self._tls}
        await self._app(scope, receive, send)


def tls_facts(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    chain = [ssl.DER_cert_to_PEM_cert(der)] if der else []
    return {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": None,
        "client_cert_error": None,
        "tls_version": None,
        "cipher_suite": None,
    }


class TlsAwareH11Protocol(H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        facts = tls_facts(transport)
        if facts is not None:
            self.app = _WithTlsExtension(self.app, facts)
