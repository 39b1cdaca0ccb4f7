"""The HTTPS listener of a real ``kts serve``: TLS 1.2 and 1.3 with forward-secret AEAD ciphers only.

Each refused client is first shown to complete its handshake with a permissive TLS server (so it really
offers what it is refused for: TLS 1.0/1.1 at OpenSSL security level 0, CBC or non-forward-secret suites
that Python's own server defaults would partly accept); kts then refuses the same client.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, free_port
from app.cli.server.tls import TLS12_CIPHERS
from tests.conftest import SECRET, seed_kafka_cluster
from tests.e2e.conftest import KTS, ROOT, kts_env
from tests.tls_material import CertificateAuthority, Pair

AEAD_TLS12 = {
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# How a refusal looks from the client: the server's alert, or (asyncio's TLS closes without sending it)
# the connection closed mid-handshake. A client that could not even offer the handshake fails otherwise.
SERVER_REFUSALS = {"TLSV1_ALERT_PROTOCOL_VERSION", "SSLV3_ALERT_HANDSHAKE_FAILURE", "UNEXPECTED_EOF_WHILE_READING"}


class Listener:
    def __init__(self, url: str, ca: Path, server: Pair) -> None:
        self.url = url
        self.ca = ca
        self.server = server


@pytest.fixture(scope="module")
def https_kts(zookeeper: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    """One ``kts serve`` on https://127.0.0.1 with an ECDSA server certificate, for the whole module."""
    directory = tmp_path_factory.mktemp("tls-hardening")
    ca = CertificateAuthority(directory)
    server = ca.issue("server", server=True, CN="localhost")
    port = free_port()
    chroot = f"/kts-tls-{uuid.uuid4().hex[:12]}"
    seed_kafka_cluster(zookeeper.connect_string, chroot)
    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT=f"{zookeeper.connect_string}{chroot}",
            KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
            KTS_HTTP_LISTENERS=f"https://127.0.0.1:{port}",
            KTS_SSL_CERTFILE=str(server.cert),
            KTS_SSL_KEYFILE=str(server.key),
        ),
        stdout=(directory / "kts.log").open("w"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"https://127.0.0.1:{port}"
        _wait_ready(url, ca.path, process)
        yield Listener(url, ca.path, server)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def _permissive_server(server: Pair) -> Iterator[str]:
    """A TLS server accepting anything OpenSSL can still speak, to prove a client offers what it offers."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    context.set_ciphers("ALL:eNULL:@SECLEVEL=0")
    context.load_cert_chain(str(server.cert), str(server.key))
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # so that the thread notices the end
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(10)
            with suppress(OSError), context.wrap_socket(connection, server_side=True) as tls:
                tls.recv(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def _wait_ready(url: str, ca: Path, process: subprocess.Popen[str]) -> None:
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "kts exited"
        try:
            if httpx.get(f"{url}/readyz", verify=_client_context(ca), timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("the HTTPS listener did not become ready")


def _client_context(
    ca: Path,
    versions: tuple[ssl.TLSVersion, ssl.TLSVersion] | None = None,
    ciphers: str | None = None,
) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(str(ca))
    if versions is not None:
        context.minimum_version, context.maximum_version = versions
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


def _handshake(url: str, context: ssl.SSLContext) -> tuple[str | None, str]:
    """(protocol, cipher) of a completed handshake; raises ssl.SSLError when the server refuses."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with (
        socket.create_connection((parts.hostname, parts.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        cipher = tls.cipher()
        assert cipher is not None
        return tls.version(), cipher[0]


def _refusal(url: str, context: ssl.SSLContext) -> str:
    with pytest.raises(ssl.SSLError) as refused:
        _handshake(url, context)
    return str(refused.value.reason)


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
@pytest.mark.parametrize("old", ["TLSv1", "TLSv1_1"])
def test_tls_before_1_2_is_refused(https_kts: Listener, old: str) -> None:
    version = getattr(ssl.TLSVersion, old)
    client = _client_context(https_kts.ca, (version, version), "DEFAULT:@SECLEVEL=0")
    with _permissive_server(https_kts.server) as permissive:
        assert _handshake(permissive, client)[0] == old.replace("_", ".")
    assert _refusal(https_kts.url, client) in SERVER_REFUSALS


@pytest.mark.parametrize(
    "weak",
    [
        "ECDHE-ECDSA-AES128-SHA256",  # CBC with HMAC: accepted by Python's default server ciphers
        "ECDHE-ECDSA-AES256-SHA384",
        "ECDHE-ECDSA-AES128-SHA",  # CBC with SHA-1
        "ECDHE-ECDSA-NULL-SHA",  # no encryption at all
    ],
)
def test_weak_tls_1_2_ciphers_are_refused(https_kts: Listener, weak: str) -> None:
    client = _client_context(https_kts.ca, (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2), f"{weak}:@SECLEVEL=0")
    with _permissive_server(https_kts.server) as permissive:
        assert _handshake(permissive, client) == ("TLSv1.2", weak)
    assert _refusal(https_kts.url, client) in SERVER_REFUSALS


def test_tls_1_2_with_aead_ciphers_is_accepted(https_kts: Listener) -> None:
    url, ca = https_kts.url, https_kts.ca
    tls12 = (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)
    assert _handshake(url, _client_context(ca, tls12))[0] == "TLSv1.2"
    for cipher in sorted(AEAD_TLS12):
        assert _handshake(url, _client_context(ca, tls12, cipher)) == ("TLSv1.2", cipher)


def test_tls_1_3_is_accepted_and_responses_carry_hsts(https_kts: Listener) -> None:
    url, ca = https_kts.url, https_kts.ca
    tls13 = _client_context(ca, (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3))
    assert _handshake(url, tls13)[0] == "TLSv1.3"
    response = httpx.get(f"{url}/healthz", verify=tls13, timeout=10)
    assert response.status_code == 200
    assert response.headers["strict-transport-security"].startswith("max-age=")
    assert response.headers["cache-control"] == "no-store"


def test_the_policy_names_only_forward_secret_aead_suites() -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers(TLS12_CIPHERS)
    tls12 = {cipher["name"] for cipher in context.get_ciphers() if cipher["protocol"] == "TLSv1.2"}
    assert AEAD_TLS12 <= tls12
    assert all(name.startswith("ECDHE-") and ("GCM" in name or "CHACHA20" in name) for name in tls12)
