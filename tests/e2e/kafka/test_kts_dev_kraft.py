"""``kts dev --kraft``: the local stack on a Kafka 4.x KRaft broker, kts on its bootstrap.servers as its own
principal; a token from kts logs a Java client in with the properties the banner prints, ``kts kafka --admin``
runs Kafka's own kafka-acls.sh against it, and Ctrl-C stops everything."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from app.cli.server.embedded_zookeeper import free_port
from app.cli.server.kafka_broker.release import KRAFT_RELEASE, fetch
from tests.api.helpers import eventually
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready
from tests.e2e.kafka.test_kts_dev_kafka import _client_properties
from tests.kafka.brokers import java_token_client

pytestmark = pytest.mark.kafka


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _processes_using(path: Path) -> list[str]:
    """Command lines of live processes naming ``path`` (the broker's runs from its directory's server.properties)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in command and "pytest" not in command:
            found.append(f"{entry.name}: {command[:200]}")
    return found


@pytest.mark.timeout(900)  # a broker's start, a Java client's compile and run, a tool: minutes on a loaded machine
def test_kts_dev_kraft_takes_a_kts_token_for_a_java_client_and_ctrl_c_stops_it_all(tmp_path: Path) -> None:
    port, kafka_port = free_port(), free_port()
    data_dir = tmp_path / "dev"
    output = tmp_path / "kts-dev.out"
    with output.open("w") as sink:
        process = subprocess.Popen(
            [*KTS, "dev", "--kraft", "--port", str(port), "--kafka-port", str(kafka_port), "--data-dir", str(data_dir)],
            cwd=ROOT,
            env=kts_env(KTS_ADMIN_PASSWORD="admin-pw", COLUMNS="80"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process, timeout_s=400)
        banner = output.read_text()
        print(banner[: banner.find("INFO")])
        assert f"Kafka cluster: 127.0.0.1:{kafka_port} (KRaft; kts logs in as User:kts)" in banner
        assert f"Kafka {KRAFT_RELEASE} (KRaft, broker and controller)" in banner
        assert "connected to the Kafka cluster" in banner  # the Kafka-protocol backend, not a ZooKeeper
        assert not (data_dir / "zookeeper").exists()

        created = httpx.post(f"{url}/v1/tokens", json={}, auth=("admin", "admin-pw"), timeout=60)
        assert created.status_code == 201, created.text
        token = created.json()
        properties = _client_properties(banner, token["tokenId"], token["hmac"])
        assert f"bootstrap.servers=127.0.0.1:{kafka_port}" in properties
        release = fetch(KRAFT_RELEASE)
        client = java_token_client(
            release.classpath, tmp_path, f"127.0.0.1:{kafka_port}", token["tokenId"], token["hmac"], "first",
            "SCRAM-SHA-512",
        )  # fmt: skip
        print(f"the Java client printed:\n{client.stdout}")
        assert client.returncode == 0, client.stdout + client.stderr
        assert f"hello from token {token['tokenId']} over SCRAM-SHA-512" in client.stdout

        # Kafka's own kafka-acls.sh, as the stack's admin: kts's principal has exactly the grants it needs.
        acls = subprocess.run(
            [*KTS, "kafka", "--data-dir", str(data_dir), "--admin", "acls", "--list"],
            cwd=ROOT,
            env=kts_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        print(acls.stdout, acls.stderr)
        assert acls.returncode == 0, acls.stderr
        for operation in ("CREATE_TOKENS", "DESCRIBE_TOKENS", "ALTER", "DESCRIBE"):
            assert f"principal=User:kts, host=*, operation={operation}, permissionType=ALLOW" in acls.stdout
        assert "admin-pw" not in acls.stdout + acls.stderr
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        returncode = process.wait(120)
    assert returncode == 130, output.read_text()[-3000:]
    deadline = time.monotonic() + 60
    eventually(lambda: not _listening(kafka_port) or time.monotonic() > deadline, timeout_s=70)
    assert not _listening(kafka_port), "the broker must stop with kts dev"
    assert _processes_using(data_dir / "kraft") == []
    assert "admin-pw" not in output.read_text()
    kts_password = (data_dir / "kraft" / "kts.password").read_text().strip()
    assert kts_password not in output.read_text()
    assert os.stat(data_dir / "kraft" / "admin.properties").st_mode & 0o077 == 0
