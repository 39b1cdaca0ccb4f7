"""Can the service listen where it is told to? Asked before anything else starts.

``kts serve`` and ``kts dev`` bind (and release at once) every address the listener will use, the way uvicorn's
``loop.create_server`` binds them (every address the host resolves to, ``SO_REUSEADDR``, IPv6 sockets
IPv6-only), so that a busy port or a foreign address is one line and exit code 2 before ZooKeeper, the audit
database or the embedded ZooKeeper are touched, rather than a bind error after all of them started.
"""

from __future__ import annotations

import errno
import socket

_REASONS = {
    errno.EADDRINUSE: "the port is already in use",
    errno.EADDRNOTAVAIL: "the address is not one of this host's",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
}


class ListenerUnavailable(Exception):
    """The listener cannot be bound; the message is the one line to print."""


def check_bindable(host: str, port: int, *, named_by: str) -> None:
    """Raise ListenerUnavailable when ``host:port`` cannot be listened on. ``named_by`` is what set it (a key or
    an option), for the message."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ListenerUnavailable(
            f"cannot listen on {where} ({named_by}): the host name does not resolve ({exc.strerror})"
        ) from exc
    for family, kind, protocol, _, address in dict.fromkeys(addresses):
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                reason = _REASONS.get(exc.errno or 0, exc.strerror or str(exc))
                raise ListenerUnavailable(f"cannot listen on {where} ({named_by}): {reason}") from exc
