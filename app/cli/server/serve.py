"""``kts serve``: run the service under uvicorn with settings from a properties file and ``KTS_*``.

With ``http.management.listeners`` a second uvicorn server, on the same event loop, serves ``/healthz``, ``/readyz``
and ``/metrics`` of the same replica (``app/api/management.py``) on a socket of its own, outside the main
listener's connection caps: probes and scrapes still answer while clients hold every slot of the main listener.
Its socket is bound before anything is served, so a busy port is one line naming the key. The main server is
started last, so it receives SIGTERM and drains gracefully while the management listener keeps answering; when
either stops, the other is told to.

An https listener gets the TLS policy of ``app/cli/server/tls.py`` (TLS 1.2+, forward-secret AEAD
ciphers). A plain http listener on an address other than loopback starts with a loud warning: callers'
passwords and token HMACs would cross the network in clear text, which Kafka itself never allows for
token requests; it is legitimate only behind a TLS-terminating mesh or proxy.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
import signal
import socket
import ssl
import sys
from typing import Any

import uvicorn

from app.cli.server.connection_slots import ListenerSlots
from app.cli.server.logging_config import LogFormat, configure_logging
from app.cli.server.tls import server_context
from app.cli.server.uvicorn_h11 import limited_protocol
from app.domain.errors import StoreUnavailable
from app.runtime import start_early
from app.settings import ConfigError, Settings, allow_everyone_warning, jwt_super_user_warnings
from app.storage.audit import migrations
from app.storage.audit.database import describe_url, make_engine

# "required" is enforced by the app, not the handshake, so that a client without a certificate gets an
# HTTP 401 that says why instead of an opaque TLS alert.
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_OPTIONAL}
# Probes and scrapes need a few connections at once; this many bounds the descriptors a flood of the management
# port can take from the main listener (and the main listener's caps bound what a flood there takes from this).
MANAGEMENT_MAX_CONNECTIONS = 64
MANAGEMENT_MAX_CONNECTIONS_PER_ADDRESS = 16  # one address cannot take every slot from the probes
# Open files besides the listeners' connections: ZooKeeper, brokers, the audit database's pool, logs, sockets.
DESCRIPTOR_RESERVE = 256
# The name log collectors know from before this module moved into app/cli/server/.
log = logging.getLogger("app.cli.serve")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may well resolve to a public address


def plaintext_warning(settings: Settings) -> str | None:
    """The start-up warning for token requests over plain HTTP beyond this host, or None."""
    if settings.listener_scheme != "http" or is_loopback(settings.listener_host):
        return None
    return (
        f"kts serves token requests over plain HTTP on {settings.listener_host}:{settings.listener_port}, "
        "a non-loopback address: passwords, token HMACs and new tokens cross the network in clear text. "
        "Kafka refuses delegation token requests on PLAINTEXT listeners for this reason. This is acceptable "
        "only behind a TLS-terminating service mesh or proxy; otherwise use an https:// listener with "
        "ssl.certfile and ssl.keyfile."
    )


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The main listener: the API, within the connection caps. Beyond ``http.max.connections`` requests are
    answered 503; the listener holds at most twice as many connections, so that clients waiting for their 503 (or
    silent ones) cannot take every file descriptor: more are closed on arrival."""
    slots = ListenerSlots(
        per_address=settings.http_max_connections_per_address, total=2 * settings.http_max_connections
    )
    return {
        "host": settings.listener_host,
        "port": settings.listener_port,
        "server_header": False,
        "log_level": "info",
        "http": limited_protocol(
            request_timeout_s=settings.http_request_timeout_ms / 1000,
            slots=slots,
            max_connections=settings.http_max_connections,
            **_tls(settings, settings.listener_scheme),
        ),
        "timeout_keep_alive": settings.http_keepalive_timeout_ms / 1000,
        **_forwarded(settings),
    }


def management_options(settings: Settings) -> dict[str, Any]:
    """The management listener: its own small caps (a flood of either port leaves the other its descriptors, and
    one address cannot take every slot from the probes), the same timeouts; no access log (probes and scrapes
    every few seconds), and no lifespan (the main server runs the app's)."""
    slots = ListenerSlots(
        per_address=min(settings.http_max_connections_per_address, MANAGEMENT_MAX_CONNECTIONS_PER_ADDRESS),
        total=MANAGEMENT_MAX_CONNECTIONS,
    )
    return {
        "server_header": False,
        "log_level": "info",
        "access_log": False,
        "lifespan": "off",
        "http": limited_protocol(
            request_timeout_s=settings.http_request_timeout_ms / 1000,
            slots=slots,
            **_tls(settings, settings.management_scheme),
        ),
        "timeout_keep_alive": settings.http_keepalive_timeout_ms / 1000,
        **_forwarded(settings),
    }


def _tls(settings: Settings, scheme: str | None) -> dict[str, Any]:
    """An https listener's TLS, done by kts's protocol once the connection is counted (not by uvicorn's ``ssl_*``
    options: asyncio's handshake comes before the protocol sees the connection)."""
    if scheme != "https":
        return {}
    assert settings.ssl_certfile is not None and settings.ssl_keyfile is not None  # checked by Settings
    context = server_context(
        str(settings.ssl_certfile),
        str(settings.ssl_keyfile),
        None if settings.ssl_cafile is None else str(settings.ssl_cafile),
        _CLIENT_AUTH[settings.ssl_client_auth],
    )
    return {"tls": context, "tls_handshake_timeout_s": settings.http_tls_handshake_timeout_ms / 1000}


def _forwarded(settings: Settings) -> dict[str, Any]:
    """X-Forwarded-For and X-Forwarded-Proto are believed from ``http.trusted.proxies`` only. uvicorn's own default
    (``proxy_headers=True``, ``FORWARDED_ALLOW_IPS`` or 127.0.0.1) would let anything on loopback name any client
    address, and with it the address the lockout, the throttle, host ACLs and the audit trail see."""
    if not settings.trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": settings.trusted_proxies}


def raise_open_file_limit(settings: Settings) -> str | None:
    """Raise the soft limit on open files towards what the connection caps may take (Python, unlike Go, leaves it
    where the container runtime put it, often 1024); a warning when the hard limit keeps it below. Past the limit
    no listener can accept anything: probes fail with the rest."""
    management = MANAGEMENT_MAX_CONNECTIONS if settings.http_management_listeners is not None else 0
    needed = 2 * settings.http_max_connections + management + DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    fits = max(1, (soft - management - DESCRIPTOR_RESERVE) // 2)
    return (
        f"kts may open {soft} files (ulimit -n), but its listeners may hold {needed - DESCRIPTOR_RESERVE} "
        f"connections (twice http.max.connections={settings.http_max_connections}, and the management listener's) "
        f"besides about {DESCRIPTOR_RESERVE} for ZooKeeper, brokers, the audit database and logs: a flood from many "
        f"addresses would leave none for the probes. Raise the limit, or lower http.max.connections to {fits}."
    )


def bind_management_socket(settings: Settings) -> socket.socket:
    """The management listener's socket, bound and listening, or a ConfigError naming the key."""
    host, port = settings.management_host, settings.management_port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as exc:
        raise ConfigError(f"http.management.listeners: cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def run_with_management(main: uvicorn.Server, management: uvicorn.Server, sock: socket.socket) -> None:
    """Run both servers on one event loop until either stops (a signal reaches the main one, installed last)."""

    async def both() -> None:
        serving = asyncio.create_task(management.serve(sockets=[sock]))
        await asyncio.sleep(0)  # the management server installs its signal handlers first, the main one last
        api = asyncio.create_task(main.serve())
        await asyncio.wait({serving, api}, return_when=asyncio.FIRST_COMPLETED)
        main.should_exit = management.should_exit = True
        await asyncio.gather(serving, api)

    with asyncio.Runner(loop_factory=main.config.get_loop_factory()) as runner:
        runner.run(both())


def prepare_audit_database(settings: Settings) -> None:
    """Migrate (or check) the audit schema before serving, so a problem is one line, not a traceback."""
    engine = make_engine(settings.audit_db_url)
    try:
        migrations.ensure_schema(engine, auto_migrate=settings.audit_db_auto_migrate)
    except StoreUnavailable as exc:
        raise StoreUnavailable(f"audit.db.url: cannot reach {describe_url(settings.audit_db_url)}") from exc
    finally:
        engine.dispose()


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def serve(settings: Settings, *, default_log_format: LogFormat = "json") -> int:
    """``default_log_format`` applies when ``log.format`` is unset (``kts dev`` passes ``text``)."""
    # Passwords, HMACs and the secret key never reach a log line: kts logs none, and kazoo's debug
    # logging of request payloads stays off (configure_logging).
    configure_logging(settings.log_format or default_log_format)
    warning = plaintext_warning(settings)
    if warning is not None:  # loud on purpose: in the log for collectors, on stderr for the operator
        log.warning(warning)
        print(f"WARNING: {warning}", file=sys.stderr, flush=True)
    if (lenient := allow_everyone_warning(settings)) is not None:
        log.warning(lenient)
    if (renamed := settings.listeners_deprecation) is not None:
        log.warning(renamed)
    for warning in jwt_super_user_warnings(settings):
        log.warning(warning)
    if (descriptors := raise_open_file_limit(settings)) is not None:
        log.warning(descriptors)
    management_socket = bind_management_socket(settings) if settings.http_management_listeners else None
    # What may still refuse the settings (the listeners' TLS files) before any ZooKeeper session is opened.
    options = uvicorn_options(settings)
    management = None if management_socket is None else management_options(settings)
    # The runtime starts first, in the background: the HTTP layer is imported and built while ZooKeeper answers
    # the start's reads, and the app's lifespan waits for it (app/runtime.py's EarlyStart).
    early = start_early(settings)
    from app.api.app import create_app
    from app.api.management import MANAGEMENT_PATHS, create_management_app

    # log_config=None: uvicorn keeps the logging configured above instead of installing its own.
    app = create_app(settings, early=early)
    server = uvicorn.Server(uvicorn.Config(app, **options, log_config=None))
    # uvicorn shuts down gracefully on SIGTERM and then re-raises the signal under the handler that was
    # installed before it ran. A no-op handler here makes that a normal return, so callers' cleanup
    # (kts dev stopping its ZooKeeper) runs and a clean shutdown exits 0.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    # Ctrl-C likewise ends in a re-raised SIGINT, which must become KeyboardInterrupt (exit 130) every time. Under
    # Python's own handler, asyncio.run puts in one of its own that only asks to cancel the server's task; a task
    # that then finishes without waiting again never sees the cancel, and the interrupt was lost (kts dev exited 0
    # on a loaded machine). A handler of ours that raises is left in place by asyncio, so it always interrupts.
    previous_interrupt = signal.signal(signal.SIGINT, _interrupt)
    log.info(
        "listening on %s: at most %d connections from one address and %d in all, counted from accept (requests "
        "beyond %d answered 503)%s",
        settings.http_listeners,
        settings.http_max_connections_per_address,
        2 * settings.http_max_connections,
        settings.http_max_connections,
        f"; TLS handshakes within {settings.http_tls_handshake_timeout_ms} ms, done by kts"
        if settings.listener_scheme == "https"
        else "",
    )
    try:
        if management_socket is None or management is None:
            server.run()
        else:
            config = uvicorn.Config(create_management_app(app), **management, log_config=None)
            log.info(
                "management listener on %s serves %s only, outside http.max.connections: at most %d connections "
                "from one address and %d in all",
                settings.http_management_listeners,
                ", ".join(MANAGEMENT_PATHS),
                MANAGEMENT_MAX_CONNECTIONS_PER_ADDRESS,
                MANAGEMENT_MAX_CONNECTIONS,
            )
            run_with_management(server, uvicorn.Server(config), management_socket)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_interrupt)
        if management_socket is not None:
            management_socket.close()
    return 0 if server.started else 1
