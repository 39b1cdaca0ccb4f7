"""``kts serve``: run the service under uvicorn with settings from a properties file and ``KTS_*``."""

from __future__ import annotations

import signal
import ssl
from typing import Any

import uvicorn

from app.api.app import create_app
from app.cli.logging_config import LogFormat, configure_logging
from app.cli.tls_protocol import TlsAwareH11Protocol
from app.domain.errors import StoreUnavailable
from app.settings import Settings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine

# "required" is enforced by the app, not the handshake, so that a client without a certificate gets an
# HTTP 401 that says why instead of an opaque TLS alert.
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_OPTIONAL}


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {
        "host": settings.listener_host,
        "port": settings.listener_port,
        "proxy_headers": False,
        "server_header": False,
        "log_level": "info",
    }
    if settings.listener_scheme == "https":
        options |= {
            "ssl_certfile": str(settings.ssl_certfile),
            "ssl_keyfile": str(settings.ssl_keyfile),
            "ssl_cert_reqs": _CLIENT_AUTH[settings.ssl_client_auth],
            "http": TlsAwareH11Protocol,
        }
        if settings.ssl_cafile is not None:
            options["ssl_ca_certs"] = str(settings.ssl_cafile)
    return options


def prepare_audit_database(settings: Settings) -> None:
    """Migrate (or check) the audit schema before serving, so a problem is one line, not a traceback."""
    engine = make_engine(settings.audit_db_url)
    try:
        migrations.ensure_schema(engine, auto_migrate=settings.audit_db_auto_migrate)
    except StoreUnavailable as exc:
        raise StoreUnavailable(f"audit.db.url: cannot reach {describe_url(settings.audit_db_url)}") from exc
    finally:
        engine.dispose()


def serve(settings: Settings, *, default_log_format: LogFormat = "json") -> int:
    """``default_log_format`` applies when ``log.format`` is unset (``kts dev`` passes ``text``)."""
    # Passwords, HMACs and the secret key never reach a log line: kts logs none, and kazoo's debug
    # logging of request payloads stays off (configure_logging).
    configure_logging(settings.log_format or default_log_format)
    # log_config=None: uvicorn keeps the logging configured above instead of installing its own.
    config = uvicorn.Config(create_app(settings), **uvicorn_options(settings), log_config=None)
    server = uvicorn.Server(config)
    # uvicorn shuts down gracefully on SIGTERM and then re-raises the signal under the handler that was
    # installed before it ran. A no-op handler here makes that a normal return, so callers' cleanup
    # (kts dev stopping its ZooKeeper) runs and a clean shutdown exits 0.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0 if server.started else 1
