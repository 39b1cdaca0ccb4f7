"""``kts sidecar --check-login`` against a real ZooKeeper-mode broker: the file appears only once the broker takes
the token, and a token no broker takes is never written (a clear error after the bounded wait)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import javaproperties
from kazoo.client import KazooClient

from app.cli.client.command_config import TokenCredential, parse_sasl_jaas_config
from app.cli.client.kafka_login import Credentials
from tests.api.conftest import put_user
from tests.api.helpers import eventually
from tests.conftest import write_properties
from tests.e2e.cli_helpers import client_env
from tests.e2e.conftest import KTS, ROOT
from tests.e2e.kafka.conftest import Kts, start_kts_beside, stop_all
from tests.kafka.brokers import RunningBroker


def _sidecar(url: str, config: Path, output: Path, log: Path, *argv: str) -> subprocess.Popen[str]:
    command = [*KTS, "sidecar", "--server", url, "--command-config", str(config), "--output-file", str(output)]
    return subprocess.Popen(
        [*command, "--security-protocol", "SASL_PLAINTEXT", *argv],
        cwd=ROOT,
        env=client_env(),
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        text=True,
    )


def test_the_file_is_written_once_the_broker_takes_the_token(
    kafka_zk_broker: RunningBroker, kts: Kts, tmp_path: Path
) -> None:
    user = kafka_zk_broker.new_user("workload")
    config = write_properties(tmp_path / "kts.properties", {"username": user.name, "password": user.password})
    output, log = tmp_path / "client.properties", tmp_path / "sidecar.log"
    sidecar = _sidecar(kts.url, config, output, log, "--check-login", kafka_zk_broker.bootstrap)
    try:
        eventually(output.exists, timeout_s=60)
        values = javaproperties.loads(output.read_text())
        credential = parse_sasl_jaas_config(values["sasl.jaas.config"])
        assert isinstance(credential, TokenCredential)
        kafka_zk_broker.login(Credentials(credential.token_id, credential.hmac, token=True))  # at once, no retry
    finally:
        sidecar.terminate()
        sidecar.wait(30)
    text = log.read_text()
    print(text)
    assert f"a broker ({kafka_zk_broker.bootstrap}) accepted token {credential.token_id} after" in text
    assert text.index("accepted token") < text.index(f"wrote {output}")
    assert credential.hmac not in text


def test_a_token_no_broker_takes_is_never_written(
    kafka_zk_broker: RunningBroker, zk_connect: str, raw_zk: KazooClient, tmp_path: Path
) -> None:
    """kts on a chroot of its own, the broker never sees its tokens: after the wait, exit 1 with the broker's
    answer, and no file."""
    put_user(raw_zk, "loner", "loner-pw")
    processes: list[subprocess.Popen[str]] = []
    try:
        elsewhere = start_kts_beside(processes, tmp_path, zk_connect, kafka_zk_broker.secret)
        config = write_properties(tmp_path / "kts.properties", {"username": "loner", "password": "loner-pw"})
        output, log = tmp_path / "client.properties", tmp_path / "sidecar.log"
        sidecar = _sidecar(
            elsewhere.url, config, output, log,
            "--check-login", kafka_zk_broker.bootstrap, "--check-login-timeout", "3000",
        )  # fmt: skip
        assert sidecar.wait(120) == 1
    finally:
        stop_all(processes)
    text = log.read_text()
    print(text)
    assert not output.exists()
    assert f"the brokers ({kafka_zk_broker.bootstrap}) did not accept token" in text
    assert "within 3 s, so it was not published" in text
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in text
