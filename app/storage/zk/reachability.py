"""Why no ZooKeeper server answered: one cause per server of the connect string, for the start-up error.

kazoo reports a connection that never came as "Connection time-out", whatever the reason. After start() has
waited ``zookeeper.connection.timeout.ms`` in vain, each server is probed once with plain sockets so that the
one line an operator reads names what is wrong: a name that does not resolve, a port nothing listens on, a host
that does not answer, or a port that answers but not as ZooKeeper.
"""

from __future__ import annotations

import socket

from kazoo.hosts import collect_hosts

# A probe is a diagnosis after the real wait, not a second wait: short.
PROBE_TIMEOUT_S = 2.0

NOT_RESOLVED = "name not resolved"
REFUSED = "connection refused (nothing listens on that port)"
NO_ANSWER = f"no answer to a TCP connection within {PROBE_TIMEOUT_S:g} s"
NOT_ZOOKEEPER = (
    "accepts TCP connections but no ZooKeeper session came of them "
    "(not a ZooKeeper port, or TLS on one side only: zookeeper.ssl.client.enable)"
)


def server_cause(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """What a plain TCP connection to one server finds."""
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return NOT_RESOLVED
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return NOT_ZOOKEEPER
    except ConnectionRefusedError:
        return REFUSED
    except TimeoutError:
        return NO_ANSWER
    except OSError as exc:
        return (exc.strerror or str(exc)).lower()


def causes(hosts: str) -> str:
    """``host:port: cause`` for every server of ``hosts`` (a connect string without its chroot), joined by ``; ``."""
    servers, _ = collect_hosts(hosts)
    return "; ".join(f"{_endpoint(host, port)}: {server_cause(host, port)}" for host, port in servers)


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
