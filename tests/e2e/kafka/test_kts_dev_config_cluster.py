"""``kts dev --config FILE`` with ``bootstrap.servers`` in the file: kts on that cluster (no embedded ZooKeeper,
the Kafka-protocol backend), never silently ignored; and the stacks that run a cluster of their own refuse it in
one line. Also ``kts kafka --admin acls --list`` on the ZooKeeper-mode stack."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import javaproperties
import pytest

from app.cli.server.embedded_zookeeper import free_port
from tests.api.backends import kafka_settings
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready
from tests.kafka.brokers import RunningBroker

pytestmark = pytest.mark.kafka


def _config(path: Path, broker: RunningBroker) -> Path:
    settings = kafka_settings(broker, "sqlite:///unused.db")
    keys = ("bootstrap_servers", "admin_security_protocol", "admin_sasl_mechanism", "admin_sasl_jaas_config")
    values = {key.replace("_", "."): str(settings[key]) for key in keys}
    values |= {"delegation.token.secret.key": broker.secret, "super.users": broker.admin.principal}
    path.write_text(javaproperties.dumps(values, timestamp=False))
    return path


@pytest.mark.timeout(600)
def test_kts_dev_config_with_bootstrap_servers_serves_that_cluster(
    kafka_kraft_broker: RunningBroker, tmp_path: Path
) -> None:
    port = free_port()
    data_dir = tmp_path / "dev"
    config = _config(tmp_path / "kts.properties", kafka_kraft_broker)
    output = tmp_path / "kts-dev.out"
    with output.open("w") as sink:
        process = subprocess.Popen(
            [*KTS, "dev", "--port", str(port), "--data-dir", str(data_dir), "--config", str(config)],
            cwd=ROOT,
            env=kts_env(KTS_ADMIN_PASSWORD="not-used-on-a-cluster-of-yours"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process, timeout_s=180)
        text = output.read_text()
        print(text[: text.find("INFO")])
        assert f"Kafka cluster: {kafka_kraft_broker.bootstrap} (bootstrap.servers" in text
        assert "starting ZooKeeper" not in text and "\n  ZooKeeper: " not in text
        assert not (data_dir / "zookeeper").exists()
        admin = kafka_kraft_broker.admin
        created = httpx.post(f"{url}/v1/tokens", json={}, auth=(admin.name, admin.password), timeout=60)
        assert created.status_code == 201, created.text  # a token from the file's cluster, through its protocol
        assert created.json()["owner"] == admin.principal
    finally:
        process.send_signal(signal.SIGINT)
        returncode = process.wait(120)
    assert returncode == 130, output.read_text()[-3000:]
    assert kafka_kraft_broker.admin.password not in output.read_text()


@pytest.mark.parametrize(
    ("stack", "line"),
    [
        ("--kraft", "bootstrap.servers=broker1.example.com:9093"),
        ("--kafka", "bootstrap.servers=broker1.example.com:9093"),
        ("--kraft", "zookeeper.connect=zk1.example.com:2181/kafka"),
    ],
)
def test_a_stack_with_a_cluster_of_its_own_refuses_another_cluster_in_one_line(
    stack: str, line: str, tmp_path: Path
) -> None:
    config = tmp_path / "kts.properties"
    config.write_text(line + "\n")
    result = subprocess.run(
        [*KTS, "dev", stack, "--port", str(free_port()), "--kafka-port", str(free_port()), "--data-dir",
         str(tmp_path / "dev"), "--config", str(config)],
        cwd=ROOT,
        env=kts_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    key = line.split("=", 1)[0]
    assert result.stderr.strip() == (
        f"kts: configuration error: {key} is set (in {config}) and {stack} runs a cluster of its own: drop one of them"
    )
    assert not (tmp_path / "dev").exists()


@pytest.mark.timeout(900)  # a broker's start and two tools: minutes on a loaded machine
def test_kts_kafka_admin_lists_acls_on_the_zookeeper_mode_stack(tmp_path: Path) -> None:
    """kts dev --kafka, then kafka-acls.sh of Kafka 3.9 (kafka.admin.AclCommand) as the stack's admin."""
    port, kafka_port = free_port(), free_port()
    data_dir = tmp_path / "dev"
    output = tmp_path / "kts-dev.out"
    with output.open("w") as sink:
        process = subprocess.Popen(
            [*KTS, "dev", "--kafka", "--port", str(port), "--kafka-port", str(kafka_port), "--data-dir", str(data_dir)],
            cwd=ROOT,
            env=kts_env(KTS_ADMIN_PASSWORD="admin-pw"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        wait_ready(f"http://127.0.0.1:{port}", process, timeout_s=300)
        assert f"kts kafka --data-dir {data_dir} --admin acls --list" in output.read_text()
        added = subprocess.run(
            [*KTS, "kafka", "--data-dir", str(data_dir), "--admin", "acls", "--add", "--allow-principal",
             "User:alice", "--operation", "Read", "--topic", "first"],
            cwd=ROOT, env=kts_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert added.returncode == 0, added.stdout + added.stderr
        listed = subprocess.run(
            [*KTS, "kafka", "--data-dir", str(data_dir), "--admin", "acls", "--list", "--topic", "first"],
            cwd=ROOT, env=kts_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        print(listed.stdout, listed.stderr)
        assert listed.returncode == 0, listed.stderr
        assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in listed.stdout
    finally:
        process.send_signal(signal.SIGINT)
        returncode = process.wait(120)
    assert returncode == 130, output.read_text()[-3000:]
