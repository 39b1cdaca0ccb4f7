"""docs/deployment.md's walkthrough on a KRaft cluster, against a real Kafka 4.4.0 KRaft broker started for it (its
storage formatted with the super user ``admin``, as step 2 says): step 1's properties are the broker's, step 3's
block runs as written (kts's principal, its grants, kts's super user), kts starts from step 4's ``kts.properties``
as ``User:kts``, then steps 5 and 6 of the ZooKeeper-mode walkthrough run word for word, as the page says.

The broker is the test's own, with a secret of its own: the walkthrough names its users (``kts``, ``ops``,
``alice``) as an operator would, and starts from a cluster where they do not exist.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import javaproperties
import pytest

from app.cli.client.kafka_login import Credentials
from app.cli.server.embedded_zookeeper import free_port
from app.cli.server.kafka_broker.broker import (
    LISTENER,
    SCRAM_LOGIN_MODULE,
    BrokerFailed,
    KafkaBroker,
    client_properties,
    write_properties,
)
from app.cli.server.kafka_broker.release import KRAFT_RELEASE, KafkaUnavailable, fetch
from tests.doc_blocks import CodeBlock, exported_names, values_block
from tests.e2e import newcomer
from tests.e2e.kafka.test_walkthrough import WALKTHROUGH, kafka_bin, runnable_blocks, section_lines
from tests.kafka.brokers import ADMIN, RunningBroker, start_kraft_broker

pytestmark = pytest.mark.kafka

KRAFT_SECTION = "The same on a KRaft cluster"
ZOOKEEPER_SECTION = "From nothing to a token a broker accepts"


def _section_text() -> str:
    lines = WALKTHROUGH.read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[n - 1] for n in section_lines(KRAFT_SECTION) if n <= len(lines))


def _properties_blocks() -> list[dict[str, str]]:
    return [javaproperties.loads(block) for block in re.findall(r"```properties\n(.*?)```", _section_text(), re.DOTALL)]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[RunningBroker]:
    """A KRaft broker of this test's own, formatted with ``admin`` only (step 2), a fresh secret: kts's principal
    exists only once step 3 has run, and is no super user."""
    try:
        started = start_kraft_broker(tmp_path / "broker", secrets.token_urlsafe(32), kts_super_user=False)
    except (KafkaUnavailable, BrokerFailed) as exc:
        pytest.fail(f"no Kafka broker: {exc}", pytrace=False)
    yield started
    started.broker.stop()


def test_the_controllers_and_brokers_settings_are_the_test_brokers(tmp_path: Path) -> None:
    """Step 1 names what the test's combined broker and controller runs with (SASL_PLAINTEXT on loopback, not
    SASL_SSL; start_kraft_broker's settings, read without starting one); step 2 formats the storage with the super
    user as the test broker's is."""
    every_node, brokers, kts = _properties_blocks()
    secret = secrets.token_urlsafe(32)
    node = KafkaBroker(
        fetch(KRAFT_RELEASE), tmp_path, secret=secret, super_users=[ADMIN.principal], scram_users=[ADMIN]
    )
    running = node.properties()
    assert running["delegation.token.secret.key"] == secret
    assert running["authorizer.class.name"] == every_node["authorizer.class.name"]
    assert set(every_node["super.users"].split(";")) <= set(running["super.users"].split(";"))
    assert "User:kts" not in running["super.users"]  # kts's principal is no super user
    documented = {key.replace("sasl_ssl", LISTENER.lower()): value for key, value in brokers.items()}
    scram = documented["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert running["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"] == scram
    assert set(documented["sasl.enabled.mechanisms"].split(",")) <= set(running["sasl.enabled.mechanisms"].split(","))
    # The format step's --add-scram is the one the test broker's storage was formatted with (KafkaBroker._format).
    assert '--add-scram "SCRAM-SHA-512=[name=admin,password=$ADMIN_PASSWORD]"' in _section_text()
    assert "zookeeper.connect" not in kts and "bootstrap.servers" in kts


def _start_kts(broker: RunningBroker, directory: Path, port: int, kts_password: str) -> subprocess.Popen[bytes]:
    """kts as step 4 configures it, with the test's stand-ins for what is the operator's: the broker's bootstrap
    and SASL_PLAINTEXT listener, a plain loopback listener instead of TLS, SQLite instead of PostgreSQL."""
    properties = _properties_blocks()[2]
    assert set(properties) == {
        "bootstrap.servers",
        "admin.security.protocol",
        "admin.sasl.mechanism",
        "super.users",
        "http.listeners",
        "ssl.certfile",
        "ssl.keyfile",
        "audit.db.url",
    }
    properties |= {
        "bootstrap.servers": broker.bootstrap,
        "admin.security.protocol": LISTENER,
        "http.listeners": f"http://127.0.0.1:{port}",
        "audit.db.url": f"sqlite:///{directory / 'audit.db'}",
    }
    del properties["ssl.certfile"], properties["ssl.keyfile"]
    config = directory / "kts.properties"
    config.write_text(javaproperties.dumps(properties, timestamp=False))
    env = {key: value for key, value in os.environ.items() if not key.startswith("KTS_")}
    env |= {
        "KTS_DELEGATION_TOKEN_SECRET_KEY": broker.secret,
        # As step 4's block exports it.
        "KTS_ADMIN_SASL_JAAS_CONFIG": f'{SCRAM_LOGIN_MODULE} required username="kts" password="{kts_password}";',
    }
    with (directory / "kts.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "serve", "--config", str(config)],
            cwd=directory,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert process.poll() is None, (directory / "kts.log").read_text()
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.terminate()
    raise AssertionError(f"kts did not become ready:\n{(directory / 'kts.log').read_text()}")


def _shell_variable(state: Path, name: str) -> str:
    """A variable the blocks before left, as the reader's shell holds it."""
    script = f'. {state / "variables"}; printf %s "${name}"'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


@pytest.mark.timeout(900)  # a broker of its own, three tools, kts's start: minutes on a loaded machine
def test_from_nothing_to_a_token_the_kraft_broker_accepts(broker: RunningBroker, tmp_path: Path) -> None:
    (principal_and_grants,) = runnable_blocks(KRAFT_SECTION)
    _first_super_user, user_and_token, client = runnable_blocks(ZOOKEEPER_SECTION)
    values = values_block(WALKTHROUGH, "your KRaft cluster's values")
    assert exported_names(values) == {"PATH", "BOOTSTRAP", "KTS_SERVER"}

    work = tmp_path / "work"
    work.mkdir()
    write_properties(work / "broker-admin.properties", client_properties(ADMIN))  # admin, formatted in (step 2)
    write_properties(work / "client.properties", {"security.protocol": LISTENER})
    tools = kafka_bin(broker, tmp_path / "kafka-bin")
    kts_bin = Path(sys.executable).parent
    port = free_port()
    kts_url = f"http://127.0.0.1:{port}"
    env = newcomer.base_environment(tmp_path / "home") | {
        "PATH": f"{tools}:{kts_bin}:{newcomer.NEWCOMER_PATH}",
        "BOOTSTRAP": broker.bootstrap,
        "KTS_SERVER": kts_url,
    }
    state = tmp_path / "shell-state"
    processes: list[subprocess.Popen[bytes]] = []

    def between_steps(block: CodeBlock) -> None:
        if block is user_and_token:  # step 4: kts serves, as User:kts with the password step 3 made
            processes.append(_start_kts(broker, tmp_path, port, _shell_variable(state, "KTS_PASSWORD")))
        if block is client and (work / "token.json").exists():
            created = httpx.Response(200, content=(work / "token.json").read_bytes()).json()
            broker.wait_for_login(Credentials(created["tokenId"], created["hmac"], token=True), ("SCRAM-SHA-512",))

    try:
        runs = newcomer.run_blocks(
            [principal_and_grants, user_and_token, client], work, env, state, before=between_steps
        )
        failed = [run for run in runs if run.failed]
        assert not failed, "\n".join(run.report() for run in failed)
        assert "Authentication failed" not in runs[-1].output
        log = (tmp_path / "kts.log").read_text()
        assert f"connected to the Kafka cluster at {broker.bootstrap} as User:kts" in log
        created = httpx.Response(200, content=(work / "token.json").read_bytes()).json()
        described = broker.tokens("--describe", "--owner-principal", "User:alice")
        assert created["tokenId"] in described.stdout  # made by the controller, for alice
        assert "User:kts" not in broker.broker.properties()["super.users"]  # the grants of step 3 were enough
        assert _shell_variable(state, "KTS_PASSWORD") not in log
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
