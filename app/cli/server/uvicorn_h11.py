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

from uvicorn.protocols.http.h11_impl import H11Protocol

from app.cli.server.tls import WithTlsExtension, tls_facts


class TlsAwareH11Protocol(H11Protocol):
    """uvicorn's ``http=`` protocol for the https listener."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        facts = tls_facts(transport)
        if facts is not None:
            self.app = WithTlsExtension(self.app, facts)
