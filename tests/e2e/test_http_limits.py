"""HTTP server limits of a real ``kts serve``: connections that send their headers a byte at a time are closed
once ``http.request.timeout.ms`` has passed, while a normal request is served meanwhile; one address cannot
hold more than ``http.max.connections.per.address`` connections, and another address is served meanwhile; a
client that pipelines requests and never reads the responses is cut off; a 64 KiB header block is refused
whether it arrives in one write or in many."""

from __future__ import annotations

import json
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


def connect(port: int, source: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    sock.setblocking(False)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
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
    if closed_by_server(sock):
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
        sock = connect(port, "127.0.0.5")
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
    url = start_kts(processes, tmp_path, "share", **_settings(zk_connect, KTS_HTTP_MAX_CONNECTIONS_PER_ADDRESS="5"))
    port = int(url.rsplit(":", 1)[1])
    held = [connect(port, "127.0.0.7") for _ in range(5)]
    extra = connect(port, "127.0.0.7")
    deadline = time.monotonic() + WAIT_S
    while not closed_by_server(extra):
        assert time.monotonic() < deadline, "the connection over the share was not closed"
        time.sleep(0.05)
    assert not any(closed_by_server(sock) for sock in held)  # the five within the share stay open
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


def _pipeline_without_reading(sock: socket.socket, request: bytes, deadline: float) -> bool:
    """Keep sending pipelined requests, never reading a response; True once the server has cut the connection."""
    poller = select.poll()
    poller.register(sock, select.POLLERR | select.POLLHUP)
    while time.monotonic() < deadline:
        try:
            sock.send(request)
        except BlockingIOError:
            pass  # the server reads no more either: its responses are stuck behind ours
        except (BrokenPipeError, ConnectionResetError):
            return True
        if poller.poll(0):
            return True
        time.sleep(0.05)
    return False


def test_a_client_that_pipelines_and_never_reads_is_cut_off(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    url = start_kts(
        processes,
        tmp_path,
        "unread",
        **_settings(zk_connect, KTS_HTTP_REQUEST_TIMEOUT_MS="2000", KTS_HTTP_MAX_CONNECTIONS_PER_ADDRESS="1"),
    )
    port = int(url.rsplit(":", 1)[1])
    reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills sooner; the attack works without it
    reader.bind(("127.0.0.9", 0))
    reader.connect(("127.0.0.1", port))
    reader.setblocking(False)
    pipelined = b"GET /openapi.json HTTP/1.1\r\nHost: kts\r\n\r\n" * 20
    opened = time.monotonic()
    try:
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.6"), timeout=30) as client:
            assert client.get(f"{url}/v1/tokens", headers=basic(ADMIN)).status_code == 200  # others are served
        cut_off = _pipeline_without_reading(reader, pipelined, opened + WAIT_S)
        held_s = time.monotonic() - opened
    finally:
        reader.close()
    assert cut_off, f"a client that never reads held its connection for {WAIT_S} s"
    print(f"never-reading client closed after {held_s:.1f} s (limit 2.0 s, keep-alive 5.0 s)")
    # its one slot of http.max.connections.per.address=1 was given back
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.9"), timeout=30) as client:
        assert client.get(f"{url}/v1/tokens", headers=basic(ADMIN)).status_code == 200


HEADER_BLOCK = (
    b"GET /v1/tokens HTTP/1.1\r\nHost: kts\r\n"
    + b"".join(b"X-Pad-%d: %s\r\n" % (index, b"a" * 1000) for index in range(64))
    + b"\r\n"
)


def _send_and_read(port: int, chunks: list[bytes]) -> tuple[bytes, bool]:
    """Send the chunks (as far as the server takes them), then read to the end: (what came back, whether the
    server closed the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30, source_address=("127.0.0.4", 0)) as sock:
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the end, as it should be
        received = b""
        try:
            while data := sock.recv(65536):
                received += data
        except ConnectionResetError:
            pass
        except TimeoutError:
            return received, False
    return received, True


def test_a_64_kib_header_block_is_refused_however_it_arrives(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    url = start_kts(processes, tmp_path, "headers", **_settings(zk_connect))
    port = int(url.rsplit(":", 1)[1])
    small_writes = [HEADER_BLOCK[at : at + 512] for at in range(0, len(HEADER_BLOCK), 512)]
    outcomes = {}
    for mode, chunks in (("one write", [HEADER_BLOCK]), (f"{len(small_writes)} writes", small_writes)):
        received, closed = _send_and_read(port, chunks)
        assert closed, f"{mode}: the connection stayed open"
        status = int(received.split(b" ", 2)[1]) if received else None
        assert status in (431, 400, None), f"{mode}: served ({received[:80]!r})"
        if status is not None:
            head, _, body = received.partition(b"\r\n\r\n")
            assert b"content-type: application/json" in head.lower()
            assert json.loads(body)["error"] in ("REQUEST_HEADER_FIELDS_TOO_LARGE", "BAD_REQUEST")
        outcomes[mode] = status or "connection reset"
    assert outcomes["one write"] == 431  # the whole block in one read: the case h11 let through
    print(f"{len(HEADER_BLOCK)}-byte header block refused: " + ", ".join(f"{m}: {o}" for m, o in outcomes.items()))
    # a header block within 16 KiB is served (the positive control)
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.4"), timeout=30) as client:
        assert client.get(f"{url}/v1/tokens", headers={**basic(ADMIN), "X-Pad": "a" * 15_000}).status_code == 200
