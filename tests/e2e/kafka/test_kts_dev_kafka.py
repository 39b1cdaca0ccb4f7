"""``kts dev --kafka``: the local stack with a real Kafka broker; a newcomer's first record, produced with a kts
token by kafka-console-producer.sh using the properties the banner prints, then read back (as the admin)."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from kafka import KafkaConsumer, TopicPartition

from app.cli.server.embedded_zookeeper import free_port
from app.cli.server.kafka_broker.release import ZOOKEEPER_MODE_RELEASE, fetch
from tests.api.helpers import eventually
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready

pytestmark = pytest.mark.kafka


def _client_properties(banner: str, token_id: str, hmac: str) -> str:
    """The banner's indented key=value lines after its "client properties" line, with the token filled in."""
    lines = banner.splitlines()
    start = next(n for n, line in enumerate(lines) if "client properties" in line) + 1
    properties = []
    for line in lines[start:]:
        if not line.startswith("    ") or "=" not in line:
            break
        properties.append(line.strip())
    text = "\n".join(properties) + "\n"
    return text.replace("<tokenId>", token_id).replace("<hmac>", hmac)


def _tool(tool: str, *arguments: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """One of Kafka 3.9's tools, by its script's name (kafka_broker/tools.py knows its class)."""
    release = fetch(ZOOKEEPER_MODE_RELEASE)
    return subprocess.run(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", release.classpath, release.main_class(tool), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_kts_dev_kafka_takes_a_kts_token_for_the_first_record(tmp_path: Path) -> None:
    port, kafka_port = free_port(), free_port()
    output = tmp_path / "kts-dev.out"
    with output.open("w") as sink:
        process = subprocess.Popen(
            [
                *KTS,
                "dev",
                "--kafka",
                "--port",
                str(port),
                "--kafka-port",
                str(kafka_port),
                "--data-dir",
                str(tmp_path / "dev"),
            ],
            cwd=ROOT,
            env=kts_env(KTS_ADMIN_PASSWORD="admin-pw", COLUMNS="80"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process, timeout_s=300)
        banner = output.read_text()
        created = httpx.post(f"{url}/v1/tokens", json={}, auth=("admin", "admin-pw"), timeout=30)
        assert created.status_code == 201, created.text
        token = created.json()
        config = tmp_path / "token.properties"
        config.write_text(_client_properties(banner, token["tokenId"], token["hmac"]))
        bootstrap = f"127.0.0.1:{kafka_port}"
        assert f"bootstrap.servers={bootstrap}" in config.read_text()

        produced = _tool(
            "console-producer", "--bootstrap-server", bootstrap, "--topic", "first", "--producer.config", str(config),
            "--request-required-acks", "all", stdin="hello from a kts token\n",
        )  # fmt: skip
        assert produced.returncode == 0, produced.stdout + produced.stderr
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="admin",  # the stack's super user, whose credentials kts keeps in ZooKeeper
            sasl_plain_password="admin-pw",
            enable_auto_commit=False,
            consumer_timeout_ms=60000,
        )
        try:
            partition = TopicPartition("first", 0)
            consumer.assign([partition])
            consumer.seek_to_beginning(partition)
            record = next(iter(consumer))
        finally:
            consumer.close()
        print(f"{banner}\nkafka-console-producer.sh wrote, and a consumer read: {record.value!r}")
        assert record.value == b"hello from a kts token"
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        returncode = process.wait(60)
    assert returncode == 130, output.read_text()[-3000:]  # as kts dev ends on Ctrl-C, the broker stopped first
    deadline = time.monotonic() + 30
    eventually(lambda: not _listening(kafka_port) or time.monotonic() > deadline, timeout_s=40)
    assert not _listening(kafka_port), "the broker must stop with kts dev"
    assert "admin-pw" not in output.read_text()


def test_without_maven_central_kts_dev_kafka_says_so_in_one_line(tmp_path: Path) -> None:
    """An empty jar cache and every Maven repository out of reach (mirrored to a closed port)."""
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>"
        "<url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>"
    )
    env = kts_env(
        KTS_ADMIN_PASSWORD="admin-pw", XDG_CACHE_HOME=str(tmp_path / "cache"), MAVEN_OPTS=f"-Duser.home={home}"
    )
    result = subprocess.run(
        [
            *KTS,
            "dev",
            "--kafka",
            "--port",
            str(free_port()),
            "--kafka-port",
            str(free_port()),
            "--data-dir",
            str(tmp_path / "dev"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(result.stderr)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(
        f"kts: could not fetch Kafka {ZOOKEEPER_MODE_RELEASE} from Maven Central (mvn exited with 1; is the repository "
        "reachable from here?): [ERROR]"
    )
