"""Running the real ``kts`` client commands against a real ``kts serve``, as a user would."""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from pathlib import Path

import httpx
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import put_user
from tests.conftest import SECRET, write_properties
from tests.e2e.conftest import KTS, ROOT, kts_env, start_kts
from tests.tls_material import CertificateAuthority

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def client_env(**extra: str) -> dict[str, str]:
    """The environment of a client command: none of the caller's KTS_* settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("KTS_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_kts(*argv: str, env: dict[str, str] | None = None, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KTS, *argv], cwd=ROOT, env=env or client_env(), capture_output=True, text=True, timeout=timeout_s
    )


def password_config(directory: Path, user: tuple[str, str]) -> Path:
    return write_properties(directory / f"{user[0]}.properties", {"username": user[0], "password": user[1]})


def jaas_config(directory: Path, username: str, password: str, *, token: bool = False, name: str = "") -> Path:
    """A Kafka client's own config file, as kafka-delegation-tokens.sh users keep it."""
    tokenauth = ' tokenauth="true"' if token else ""
    return write_properties(
        directory / f"{name or username}-kafka-client.properties",
        {
            "bootstrap.servers": "broker.example.com:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="{username}" password="{password}"{tokenauth};',
        },
    )


def serve_https(
    processes: list[subprocess.Popen[str]],
    log: Path,
    zk_connect: str,
    secret: str,
    ca: CertificateAuthority,
    *,
    client_auth: str,
    mapping_rules: str,
    **settings: str,
) -> str:
    """Start ``kts serve`` on an https listener with a server certificate from ``ca``, which also signs the client
    certificates it trusts (``client_auth``, mapped by ``mapping_rules``); its URL once it answers."""
    server = ca.issue("server", server=True, CN="localhost")
    port = free_port()
    env = kts_env(
        KTS_HTTP_LISTENERS=f"https://127.0.0.1:{port}",
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=secret,
        KTS_SSL_CERTFILE=str(server.cert),
        KTS_SSL_KEYFILE=str(server.key),
        KTS_SSL_CAFILE=str(ca.path),
        KTS_SSL_CLIENT_AUTH=client_auth,
        KTS_SSL_PRINCIPAL_MAPPING_RULES=mapping_rules,
        **settings,
    )
    process = subprocess.Popen(
        [*KTS, "serve"], cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT, text=True
    )
    processes.append(process)
    url = f"https://127.0.0.1:{port}"
    context = ssl.create_default_context(cafile=str(ca.path))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "kts serve exited"
        try:
            httpx.get(f"{url}/healthz", verify=context, timeout=1)
            return url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("the https listener did not come up")


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``kts: ...`` line a refused or failed command prints on stderr."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kts: "), lines[0]
    return lines[0]


def plain_service(
    processes: list[subprocess.Popen[str]], log_dir: Path, zk_connect: str, raw_zk: KazooClient, *users: tuple[str, str]
) -> str:
    """A ``kts serve`` over plain http with ``users`` (SCRAM credentials) and ``admin`` as super user."""
    for user in users:
        put_user(raw_zk, *user)
    return start_kts(
        processes,
        log_dir,
        "kts",
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SUPER_USERS="User:admin",
    )
