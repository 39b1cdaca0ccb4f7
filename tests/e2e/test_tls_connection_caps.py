"""The connection caps of a real ``kts serve`` on https listeners, attacked with silent TCP connections (connected,
never a byte of TLS): each counts from the moment it is accepted, not from a handshake it never starts.

- 150 silent connections from one address against ``http.max.connections.per.address=20``: the server holds at
  most 20 of them (counted in its own sockets, /proc/<pid>/net/tcp), and the address is served again once it
  lets them go;
- with 512 file descriptors and 520 silent connections from one address to either listener, both still answer
  another address (``/healthz`` on the management listener, a token call on the main one).

The handshake deadline is set far beyond the tests' length, so that the caps alone hold the flood off. The
figures (connections held, descriptors used) are printed for the closing note.
"""

from __future__ import annotations

import os
import resource
import socket
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ADMIN, basic, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env
from tests.e2e.test_http_limits import closed_by_server
from tests.tls_material import CertificateAuthority

SILENT = 150
PER_ADDRESS = 20
DESCRIPTORS = 512
FLOOD = 520


class Kts:
    def __init__(self, process: subprocess.Popen[str], port: int, management_port: int, ca: Path) -> None:
        self.process = process
        self.port = port
        self.management_port = management_port
        self.ca = ca

    def get(self, port: int, path: str, source: str, **headers: str) -> httpx.Response:
        context = ssl.create_default_context(cafile=str(self.ca))
        transport = httpx.HTTPTransport(local_address=source, verify=context)
        with httpx.Client(transport=transport, timeout=30) as client:
            return client.get(f"https://127.0.0.1:{port}{path}", headers=headers)

    def connections_from(self, port: int, source: str) -> int:
        """TCP connections this process holds on ``port`` from ``source`` (its own sockets, by inode)."""
        fd_dir = f"/proc/{self.process.pid}/fd"
        inodes = set()
        for fd in os.listdir(fd_dir):
            try:
                link = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue  # closed meanwhile
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
        remote = f"{int.from_bytes(socket.inet_aton(source), 'little'):08X}"
        held = 0
        for line in Path(f"/proc/{self.process.pid}/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].split(":")[1], 16)
            if local_port == port and fields[2].split(":")[0] == remote and fields[9] in inodes:
                held += 1
        return held

    def descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))


def _serve(
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
    zk_connect: str,
    *,
    nofile: int | None = None,
    **settings: str,
) -> Kts:
    """``kts serve`` with https main and management listeners; ``nofile``: its file descriptor limit."""
    ca = CertificateAuthority(tmp_path)
    server = ca.issue("server", server=True, CN="localhost")
    port, management_port = free_port(), free_port()
    env = kts_env(
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SUPER_USERS="User:admin",
        KTS_HTTP_LISTENERS=f"https://127.0.0.1:{port}",
        KTS_HTTP_MANAGEMENT_LISTENERS=f"https://127.0.0.1:{management_port}",
        KTS_SSL_CERTFILE=str(server.cert),
        KTS_SSL_KEYFILE=str(server.key),
        KTS_HTTP_TLS_HANDSHAKE_TIMEOUT_MS="600000",  # the caps, not the deadline, hold the flood off
        KTS_HTTP_REQUEST_TIMEOUT_MS="600000",
        **settings,
    )

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=env,
        stdout=(tmp_path / "kts.log").open("a"),
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limit,
    )
    processes.append(process)
    kts = Kts(process, port, management_port, ca.path)

    def ready() -> bool:
        assert process.poll() is None, "kts serve exited"
        try:
            return kts.get(management_port, "/readyz", "127.0.0.1").status_code == 200
        except httpx.HTTPError:
            return False

    eventually(ready, timeout_s=60)
    return kts


def _silent(port: int, source: str, count: int) -> list[socket.socket]:
    """``count`` TCP connections from ``source`` that never send a byte (the kernel completes them whether or
    not the server accepts)."""
    return [socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0)) for _ in range(count)]


def test_silent_connections_count_towards_the_per_address_cap_before_any_handshake(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    kts = _serve(processes, tmp_path, zk_connect, KTS_HTTP_MAX_CONNECTIONS_PER_ADDRESS=str(PER_ADDRESS))
    silent = _silent(kts.port, "127.0.0.21", SILENT)
    try:
        # Served after the flood was accepted: by its answer the server has counted (and refused) every silent one.
        assert kts.get(kts.port, "/v1/tokens", "127.0.0.22", **basic(ADMIN)).status_code == 200
        held = kts.connections_from(kts.port, "127.0.0.21")
        descriptors = kts.descriptors()
        closed = sum(closed_by_server(sock) for sock in silent)
    finally:
        for sock in silent:
            sock.close()
    print(
        f"{SILENT} silent connections from one address, http.max.connections.per.address={PER_ADDRESS}: the server "
        f"held {held}, {closed} were closed on arrival; {descriptors} descriptors in use"
    )
    assert held <= PER_ADDRESS
    # The slots are given back as the client lets its connections go (handshakes never begun).
    eventually(lambda: _answers(lambda: kts.get(kts.port, "/v1/tokens", "127.0.0.21", **basic(ADMIN))) == 200, 120)


def _answers(call: Callable[[], httpx.Response]) -> int | str:
    try:
        return call().status_code
    except httpx.HTTPError as exc:
        return type(exc).__name__


@pytest.mark.parametrize("flooded", ["main", "management"])
def test_a_silent_flood_of_one_listener_leaves_descriptors_for_the_other(
    flooded: str, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    """With the default caps and 512 descriptors (the issue's figures)."""
    put_user(raw_zk, *ADMIN)
    kts = _serve(processes, tmp_path, zk_connect, nofile=DESCRIPTORS)
    port = kts.port if flooded == "main" else kts.management_port
    flood = _silent(port, "127.0.0.23", FLOOD)
    try:
        probe = _answers(lambda: kts.get(kts.management_port, "/healthz", "127.0.0.24"))
        call = _answers(lambda: kts.get(kts.port, "/v1/tokens", "127.0.0.25", **basic(ADMIN)))
        held = kts.connections_from(port, "127.0.0.23")
        descriptors = kts.descriptors()
    finally:
        for sock in flood:
            sock.close()
    print(
        f"{FLOOD} silent connections from one address to the {flooded} listener, {DESCRIPTORS} descriptors: the "
        f"server held {held} of them and used {descriptors} descriptors; management /healthz answered {probe}, "
        f"a token call from another address answered {call}"
    )
    assert (probe, call) == (200, 200)  # the management listener's share per address leaves the probes room
    assert kts.process.poll() is None
