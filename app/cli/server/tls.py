"""The HTTPS listener: a hardened TLS policy, and the ASGI TLS extension that hands the app the client
certificate.

Policy: TLS 1.2 or later; for TLS 1.2 only forward-secret AEAD suites (ECDHE with AES-GCM or
ChaCha20-Poly1305), for TLS 1.3 OpenSSL's defaults (all AEAD); no renegotiation, no compression. This is
Mozilla's "intermediate" profile without DHE, which every supported Java and librdkafka client speaks.
``server_context`` builds the listener's context; kts, not uvicorn, does the handshake with it
(``app/cli/server/uvicorn_h11.py``), once the connection is counted towards the connection caps.

The handshake verifies client certificates, but uvicorn does not put them in the ASGI scope, so the app could
not know who connected. ``WithTlsExtension`` adds ``scope["extensions"]["tls"]`` (``client_cert_chain``: PEM
strings, leaf first; ``client_cert_error``) to every request of one connection, as the ASGI TLS extension
specifies; ``uvicorn_h11.py`` wraps each connection's app in it.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

MINIMUM_TLS_VERSION = ssl.TLSVersion.TLSv1_2
# OpenSSL cipher string for TLS 1.2 (TLS 1.3 suites are configured apart and keep their secure defaults).
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL"


def harden(context: ssl.SSLContext) -> ssl.SSLContext:
    """Apply the policy above to a server context."""
    context.minimum_version = MINIMUM_TLS_VERSION
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION
    return context


def server_context(certfile: str, keyfile: str, cafile: str | None, verify_mode: ssl.VerifyMode) -> ssl.SSLContext:
    """An https listener's context: its certificate, the CAs its clients' certificates must chain to, the policy."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    context.verify_mode = verify_mode
    if cafile is not None:
        context.load_verify_locations(cafile)
    return harden(context)


class WithTlsExtension:
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
    """The ASGI TLS extension's fields for a connection, or None when it is not TLS."""
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
