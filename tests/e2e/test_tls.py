"""A real HTTPS listener with client certificates made by the test; principals mapped as Kafka maps them."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ALICE, basic, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env
from tests.tls_material import CertificateAuthority, Pair

RULES = r"RULE:^CN=([^,]+),OU=eng,O=acme,C=US$/$1/L,RULE:^CN=svc-(.*?),.*$/$1-service/"


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, object]:
    ca = CertificateAuthority(tmp_path)
    (tmp_path / "rogue").mkdir()
    rogue_ca = CertificateAuthority(tmp_path / "rogue", "rogue CA")
    return {
        "ca": ca,
        "server": ca.issue("server", server=True, CN="localhost"),
        "alice": ca.issue("alice", CN="Alice", OU="eng", O="acme", C="US"),
        "svc": ca.issue("svc", CN="svc-spark", O="acme"),
        "nomatch": ca.issue("nomatch", CN="mallory", OU="sales", O="acme", C="US"),
        "rogue": rogue_ca.issue("rogue", CN="Alice", OU="eng", O="acme", C="US"),
    }


def _serve(zk_connect: str, pki: dict[str, object], client_auth: str, rules: str, processes: list) -> str:
    port = free_port()
    server = pki["server"]
    ca = pki["ca"]
    assert isinstance(server, Pair) and isinstance(ca, CertificateAuthority)
    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT=zk_connect,
            KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
            KTS_HTTP_LISTENERS=f"https://127.0.0.1:{port}",
            KTS_SSL_CERTFILE=str(server.cert),
            KTS_SSL_KEYFILE=str(server.key),
            KTS_SSL_CAFILE=str(ca.path),
            KTS_SSL_CLIENT_AUTH=client_auth,
            KTS_SSL_PRINCIPAL_MAPPING_RULES=rules,
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    processes.append(process)
    url = f"https://127.0.0.1:{port}"
    _wait_tls_ready(url, ca.path, process)
    return url


def _wait_tls_ready(url: str, ca: Path, process: subprocess.Popen[str]) -> None:
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "kts exited"
        try:
            httpx.get(f"{url}/healthz", verify=_context(ca), timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("HTTPS listener did not come up")


def _context(ca: Path, client: Pair | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return context


def _client(url: str, pki: dict[str, object], who: str | None) -> httpx.Client:
    ca = pki["ca"]
    assert isinstance(ca, CertificateAuthority)
    pair = pki[who] if who else None
    assert pair is None or isinstance(pair, Pair)
    return httpx.Client(base_url=url, verify=_context(ca.path, pair), timeout=10)


def test_required_client_certificates_map_to_principals(
    zk_connect: str, raw_zk: KazooClient, pki: dict[str, object], processes: list
) -> None:
    url = _serve(zk_connect, pki, "required", RULES, processes)
    with _client(url, pki, "alice") as alice:
        created = alice.post("/v1/tokens", json={})
        assert created.status_code == 201
        assert created.json()["owner"] == "User:alice"  # CN=Alice,... lower-cased by the first rule
    with _client(url, pki, "svc") as service:
        assert service.post("/v1/tokens", json={}).json()["owner"] == "User:spark-service"
    with _client(url, pki, None) as anonymous:
        response = anonymous.get("/v1/tokens")
        assert response.status_code == 401
        assert "certificate" in response.json()["message"]
        put_user(raw_zk, *ALICE)
        assert anonymous.get("/v1/tokens", headers=basic(ALICE)).status_code == 401  # required means required
    with _client(url, pki, "nomatch") as unmapped:
        assert unmapped.get("/v1/tokens").status_code == 401


def test_untrusted_client_certificates_fail_the_handshake(
    zk_connect: str, pki: dict[str, object], processes: list
) -> None:
    url = _serve(zk_connect, pki, "required", RULES, processes)
    with _client(url, pki, "rogue") as rogue, pytest.raises(httpx.HTTPError):
        rogue.get("/v1/tokens")


def test_default_mapping_and_requested_mode(
    zk_connect: str, raw_zk: KazooClient, pki: dict[str, object], processes: list
) -> None:
    url = _serve(zk_connect, pki, "requested", "DEFAULT", processes)
    with _client(url, pki, "alice") as alice:
        assert alice.post("/v1/tokens", json={}).json()["owner"] == "User:CN=Alice,OU=eng,O=acme,C=US"
    put_user(raw_zk, *ALICE)
    with _client(url, pki, None) as password_user:
        assert password_user.get("/v1/tokens").status_code == 401
        created = password_user.post("/v1/tokens", json={}, headers=basic(ALICE))
        assert created.json()["owner"] == "User:alice"
