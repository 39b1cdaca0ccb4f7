"""HTTP server limits of a real ``kts serve``: connections that send their headers a byte at a time are closed
once ``http.request.timeout.ms`` has passed, while a normal request is served meanwhile; one address cannot
hold more than ``http.max.connections.per.address`` connections, and another address is served meanwhile."""

from __future__ import annotations

import select
import socket
import subprocess
import time
from pathlib import Path

import httpx
from kazoo.client import KazooClient

from tests.api.conftest import ADMIN, basic, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts

SLOW_CONNECTIONS = 30
WAIT_S = 120  # how long the test waits for the server to close them (the limit under test is 2 s)


def _settings(zk_connect: str, **extra: str) -> dict[str, str]:
    return {
        "KTS_ZOOKEEPER_CONNECT": zk_connect,
        "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
        "KTS_SUPER_USERS": "User:admin",
        **extra,
    }


def _connect(port: int, source: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    sock.setblocking(False)
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    # poll, not select: in a long test run this process holds more than select's 1024 descriptors
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    if not poller.poll(0):
        return False
    try:
        return sock.recv(4096) == b""
    except (ConnectionResetError, BlockingIOError):
        return True


def _dribble(sock: socket.socket) -> bool:
    """Send one more header byte; False when the server has closed the connection."""
    if _closed_by_server(sock):
        return False
    try:
        sock.send(b"a")
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


def test_slow_headers_are_cut_off_and_others_are_served_meanwhile(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    url = start_kts(processes, tmp_path, "limits", **_settings(zk_connect, KTS_HTTP_REQUEST_TIMEOUT_MS="2000"))
    port = int(url.rsplit(":", 1)[1])
    slow = []
    for _ in range(SLOW_CONNECTIONS):
        sock = _connect(port, "127.0.0.5")
        sock.send(b"GET /v1/tokens HTTP/1.1\r\nHost: kts\r\nX-Slow: ")
        slow.append(sock)
    opened = time.monotonic()
    # While they are held, a normal request is served (the positive control: the server is not stuck).
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.6"), timeout=30) as client:
        assert client.get(f"{url}/v1/tokens", headers=basic(ADMIN)).status_code == 200

    open_ = list(slow)
    while open_ and time.monotonic() - opened < WAIT_S:
        open_ = [sock for sock in open_ if _dribble(sock)]
        time.sleep(0.1)
    held_s = time.monotonic() - opened
    for sock in slow:
        sock.close()
    assert not open_, f"{len(open_)} of {SLOW_CONNECTIONS} slow connections still open after {WAIT_S} s"
    print(f"{SLOW_CONNECTIONS} slow connections all closed by the server after {held_s:.1f} s (limit 2 s)")
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.5"), timeout=30) as client:
        assert client.get(f"{url}/v1/tokens", headers=basic(ADMIN)).status_code == 200  # not banned: served again


def test_one_address_cannot_hold_more_than_its_share_of_connections(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    url = start_kts(
        processes, tmp_path, "share", **_settings(zk_connect, KTS_HTTP_MAX_CONNECTIONS_PER_ADDRESS="5")
    )
    port = int(url.rsplit(":", 1)[1])
    held = [_connect(port, "127.0.0.7") for _ in range(5)]
    extra = _connect(port, "127.0.0.7")
    deadline = time.monotonic() + WAIT_S
    while not _closed_by_server(extra):
        assert time.monotonic() < deadline, "the connection over the share was not closed"
        time.sleep(0.05)
    assert not any(_closed_by_server(sock) for sock in held)  # the five within the share stay open
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.8"), timeout=30) as client:
        assert client.get(f"{url}/v1/tokens", headers=basic(ADMIN)).status_code == 200
    for sock in [*held, extra]:
        sock.close()
    eventually_served = time.monotonic() + WAIT_S
    while True:  # the slots are given back when the connections close
        try:
            with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.7"), timeout=30) as client:
                if client.get(f"{url}/v1/tokens", headers=basic(ADMIN)).status_code == 200:
                    break
        except httpx.TransportError:
            pass
        assert time.monotonic() < eventually_served
        time.sleep(0.1)
