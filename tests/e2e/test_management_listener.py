"""The management listener of a real ``kts serve`` (``http.management.listeners``): while ten addresses hold every
connection slot of the main listener, which answers 503 with the error envelope, ``/healthz`` and ``/readyz`` on the
management listener answer 200, so the chart's probes do not restart the pod; it serves nothing else, the same TLS
as the main listener, and a busy port is one line naming the key."""

from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ADMIN, basic, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.cli_helpers import serve_https
from tests.e2e.conftest import KTS, ROOT, kts_env, start_kts
from tests.e2e.test_http_limits import closed_by_server, connect
from tests.tls_material import CertificateAuthority

FLOOD_ADDRESSES = [f"127.0.0.{10 + index}" for index in range(10)]
PER_ADDRESS = 20
MAX_CONNECTIONS = len(FLOOD_ADDRESSES) * PER_ADDRESS  # the flood takes every slot, as 10 x 100 = 1000 would
PROBES = 20


def _settings(zk_connect: str, management_port: int, **extra: str) -> dict[str, str]:
    return {
        "KTS_ZOOKEEPER_CONNECT": zk_connect,
        "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
        "KTS_SUPER_USERS": "User:admin",
        "KTS_HTTP_MANAGEMENT_LISTENERS": f"http://127.0.0.1:{management_port}",
        **extra,
    }


def _get(url: str, source: str, **headers: str) -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30) as client:
        return client.get(url, headers=headers)


def test_a_flood_of_the_main_listener_leaves_the_management_listener_answering(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    management_port = free_port()
    url = start_kts(
        processes,
        tmp_path,
        "flooded",
        **_settings(
            zk_connect,
            management_port,
            KTS_HTTP_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
            KTS_HTTP_MAX_CONNECTIONS_PER_ADDRESS=str(PER_ADDRESS),
            KTS_HTTP_REQUEST_TIMEOUT_MS="600000",  # the flood's silent connections stay for the whole test
        ),
    )
    management = f"http://127.0.0.1:{management_port}"
    port = int(url.rsplit(":", 1)[1])
    flood = [connect(port, address) for address in FLOOD_ADDRESSES for _ in range(PER_ADDRESS)]
    try:
        refused: list[httpx.Response] = []

        def main_listener_refuses() -> bool:  # once the server has accepted the whole flood
            response = _get(f"{url}/healthz", "127.0.0.30")
            refused[:] = [response]
            return response.status_code == 503

        eventually(main_listener_refuses, timeout_s=120)
        (at_cap,) = refused
        assert at_cap.headers["content-type"] == "application/json"
        assert at_cap.json()["error"] == "TOO_MANY_CONNECTIONS"
        assert set(at_cap.json()) == {"error", "message"}
        assert "http.max.connections" in at_cap.json()["message"]
        assert at_cap.headers["retry-after"].isdigit()
        assert at_cap.headers["connection"] == "close"
        token_call = _get(f"{url}/v1/tokens", "127.0.0.31", **basic(ADMIN))
        assert token_call.status_code == 503 and token_call.json()["error"] == "TOO_MANY_CONNECTIONS"

        answers = {"/healthz": 0, "/readyz": 0}
        for _ in range(PROBES):
            for path in answers:
                answers[path] += _get(f"{management}{path}", "127.0.0.32").status_code == 200
        metrics = _get(f"{management}/metrics", "127.0.0.32")
        assert not any(closed_by_server(sock) for sock in flood), "the flood's connections are held, not shed"
        held = len(flood)
    finally:
        for sock in flood:
            sock.close()
    print(
        f"flood: {held} connections held from {len(FLOOD_ADDRESSES)} addresses (cap {MAX_CONNECTIONS}), main "
        f"listener answered 503 {at_cap.json()['error']} (JSON, Retry-After {at_cap.headers['retry-after']}), "
        f"management /healthz 200 in {answers['/healthz']} of {PROBES} probes, /readyz 200 in "
        f"{answers['/readyz']} of {PROBES}"
    )
    assert answers == {"/healthz": PROBES, "/readyz": PROBES}
    assert metrics.status_code == 200 and "kts_build_info" in metrics.text

    eventually(lambda: _get(f"{url}/healthz", "127.0.0.30").status_code == 200, timeout_s=120)  # slots given back
    process = processes[-1]
    process.terminate()
    assert process.wait(60) == 0  # both servers stop on SIGTERM


def test_the_management_listener_serves_probes_and_metrics_only(
    zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    put_user(raw_zk, *ADMIN)
    management_port = free_port()
    start_kts(
        processes, tmp_path, "managed", **_settings(zk_connect, management_port, KTS_METRICS_AUTH_REQUIRED="true")
    )
    management = f"http://127.0.0.1:{management_port}"
    assert httpx.get(f"{management}/healthz").json()["status"] == "ok"
    assert httpx.get(f"{management}/readyz").json()["status"] == "ready"
    for path in ("/v1/tokens", "/docs", "/openapi.json", "/v1/audit"):
        response = httpx.get(f"{management}{path}", headers=basic(ADMIN))
        assert response.status_code == 404, path
        assert response.json()["error"] == "NOT_FOUND"
    # metrics.auth.required applies here as on the main listener
    unauthenticated = httpx.get(f"{management}/metrics")
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error"] == "AUTHENTICATION_FAILED"
    assert httpx.get(f"{management}/metrics", headers=basic(ADMIN)).status_code == 200


def test_a_busy_management_port_is_one_line_naming_the_key(zk_connect: str, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        env = kts_env(KTS_HTTP_LISTENERS=f"http://127.0.0.1:{free_port()}", **_settings(zk_connect, port))
        result = subprocess.run([*KTS, "serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    # Checked with the main listener, before the audit database and ZooKeeper (app/cli/server/listener_check.py).
    assert line == f"kts: cannot listen on 127.0.0.1:{port} (http.management.listeners): the port is already in use"


@pytest.mark.parametrize("client_auth", ["none", "required"])
def test_an_https_management_listener_speaks_tls_like_the_main_one(
    zk_connect: str, processes: list[subprocess.Popen[str]], tmp_path: Path, client_auth: str
) -> None:
    ca = CertificateAuthority(tmp_path)
    management_port = free_port()
    serve_https(
        processes,
        tmp_path / "kts.log",
        zk_connect,
        SECRET,
        ca,
        client_auth=client_auth,
        mapping_rules="DEFAULT",
        KTS_HTTP_MANAGEMENT_LISTENERS=f"https://127.0.0.1:{management_port}",
    )
    context = ssl.create_default_context(cafile=str(ca.path))
    management = f"https://127.0.0.1:{management_port}"
    # the kubelet presents no certificate: the probes need none, whatever ssl.client.auth says
    assert httpx.get(f"{management}/healthz", verify=context).status_code == 200
    assert httpx.get(f"{management}/readyz", verify=context).status_code == 200
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{management_port}/healthz", timeout=10).raise_for_status()
