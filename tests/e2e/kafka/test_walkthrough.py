"""docs/deployment.md's walkthrough, from nothing to a token a broker accepts, run against a real Kafka 3.9.2 broker
in ZooKeeper mode started for it: the blocks marked ``<!-- runnable against Kafka brokers -->`` run as written, in
order, with the values step 2 tells the reader to bring (Kafka's tools on the PATH, ``BOOTSTRAP``, ``KTS_SERVER``,
``broker-admin.properties`` and ``client.properties``), and kts started from step 4's ``kts.properties``.

The broker is the test's own, on a chroot of its own, with a secret of its own: the walkthrough names its users
(``ops``, ``alice``) as an operator would, and starts from a cluster where they do not exist.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import javaproperties
import pytest

from app.cli.client.kafka_login import Credentials
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, free_port
from app.cli.server.kafka_broker.broker import LISTENER, BrokerFailed, client_properties, write_properties
from app.cli.server.kafka_broker.release import KafkaUnavailable
from tests.doc_blocks import ROOT, CodeBlock, code_blocks, exported_names, values_block
from tests.e2e import newcomer
from tests.kafka.brokers import RunningBroker, start_zookeeper_mode_broker

pytestmark = pytest.mark.kafka

WALKTHROUGH = ROOT / "docs" / "deployment.md"
# Kafka's bin/ scripts the walkthrough uses (each runs the class its release's script runs: kafka_broker/tools.py).
TOOLS = ("kafka-configs.sh", "kafka-topics.sh", "kafka-acls.sh")


def _section(heading: str) -> str:
    text = WALKTHROUGH.read_text(encoding="utf-8")
    start = text.index(f"### {heading}")
    end = text.find("\n### ", start + 1)
    return text[start:end]


def section_lines(heading: str) -> range:
    """The lines (1-based) of the ``## heading`` section of the walkthrough's page."""
    lines = WALKTHROUGH.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"## {heading}") + 1
    end = next((n for n in range(start, len(lines)) if lines[n].startswith("## ")), len(lines))
    return range(start, end + 1)


def runnable_blocks(heading: str) -> list[CodeBlock]:
    """The blocks marked runnable against Kafka brokers in the ``## heading`` section, in order."""
    lines = section_lines(heading)
    return [block for block in code_blocks(WALKTHROUGH) if block.runnable_against_brokers and block.line in lines]


def _properties_block(heading: str) -> dict[str, str]:
    (block,) = re.findall(r"```properties\n(.*?)```", _section(heading), flags=re.DOTALL)
    properties: dict[str, str] = javaproperties.loads(block)
    return properties


@pytest.fixture
def broker(zookeeper: EmbeddedZooKeeper, tmp_path: Path) -> Iterator[RunningBroker]:
    """A ZooKeeper-mode broker of this test's own: a chroot nobody else uses, a fresh secret."""
    connect = f"{zookeeper.connect_string}/walkthrough-{uuid.uuid4().hex[:12]}"
    try:
        started = start_zookeeper_mode_broker(tmp_path / "broker", connect, secrets.token_urlsafe(32))
    except (KafkaUnavailable, BrokerFailed) as exc:
        pytest.fail(f"no Kafka broker: {exc}", pytrace=False)
    yield started
    started.broker.stop()


def kafka_bin(broker: RunningBroker, directory: Path) -> Path:
    """Kafka's bin/ scripts for the walkthrough's tools: the release's classes on its classpath."""
    directory.mkdir()
    log4j = directory / "log4j.properties"
    log4j.write_text("log4j.rootLogger=WARN, stderr\nlog4j.appender.stderr=org.apache.log4j.varia.NullAppender\n")
    for script in TOOLS:
        path = directory / script
        path.write_text(
            "#!/bin/sh\n"
            f"exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j.configuration=file:{log4j} "
            f"-cp '{broker.classpath}' {broker.broker.release.main_class(script)} \"$@\"\n"
        )
        path.chmod(0o755)
    return directory


def _start_kts(broker: RunningBroker, directory: Path, port: int, processes: list[subprocess.Popen[bytes]]) -> None:
    """kts as step 4 configures it, with the test's stand-ins for what is the operator's: the broker's ZooKeeper,
    a plain loopback listener instead of TLS, SQLite instead of PostgreSQL. KTS_ADMIN_PASSWORD is set, as a
    reader of kts dev's docs might leave it: kts serve must ignore it."""
    properties = _properties_block("4. kts")
    assert set(properties) == {
        "zookeeper.connect",
        "super.users",
        "http.listeners",
        "ssl.certfile",
        "ssl.keyfile",
        "audit.db.url",
    }
    assert broker.zookeeper_connect is not None
    properties |= {
        "zookeeper.connect": broker.zookeeper_connect,
        "http.listeners": f"http://127.0.0.1:{port}",
        "audit.db.url": f"sqlite:///{directory / 'audit.db'}",
    }
    del properties["ssl.certfile"], properties["ssl.keyfile"]
    config = directory / "kts.properties"
    config.write_text(javaproperties.dumps(properties, timestamp=False))
    env = {key: value for key, value in os.environ.items() if not key.startswith("KTS_")}
    env |= {"KTS_DELEGATION_TOKEN_SECRET_KEY": broker.secret, "KTS_ADMIN_PASSWORD": "not-read-by-kts-serve"}
    with (directory / "kts.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "serve", "--config", str(config)],
            cwd=directory,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, (directory / "kts.log").read_text()
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"kts did not become ready:\n{(directory / 'kts.log').read_text()}")


def _token(work: Path) -> Credentials:
    created = httpx.Response(200, content=(work / "token.json").read_bytes()).json()
    return Credentials(created["tokenId"], created["hmac"], token=True)


def test_the_brokers_settings_are_the_test_brokers(broker: RunningBroker) -> None:
    """Step 1 names what the test's broker runs with (its listener is SASL_PLAINTEXT on loopback, not SASL_SSL)."""
    documented = {
        key.replace("sasl_ssl", LISTENER.lower()): value for key, value in _properties_block("1. The brokers").items()
    }
    running = broker.broker.properties()
    assert set(documented) <= set(running)
    scram = documented["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    assert running["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"] == scram
    assert set(documented["sasl.enabled.mechanisms"].split(",")) <= set(running["sasl.enabled.mechanisms"].split(","))
    assert running["authorizer.class.name"] == documented["authorizer.class.name"]
    assert set(documented["super.users"].split(";")) <= set(running["super.users"].split(";"))


def test_from_nothing_to_a_token_the_broker_accepts(broker: RunningBroker, tmp_path: Path) -> None:
    blocks = runnable_blocks("From nothing to a token a broker accepts")
    assert len(blocks) == 3
    _first_super_user, user_and_token, client = blocks
    assert exported_names(values_block(WALKTHROUGH, "your cluster's values")) == {"PATH", "BOOTSTRAP", "KTS_SERVER"}

    work = tmp_path / "work"
    work.mkdir()
    # Step 2's two files: the brokers' super user's login, and how any client reaches the brokers.
    write_properties(work / "broker-admin.properties", client_properties(broker.admin))
    write_properties(work / "client.properties", {"security.protocol": LISTENER})
    tools = kafka_bin(broker, tmp_path / "kafka-bin")
    kts_bin = Path(sys.executable).parent  # where pip put the kts command
    env = newcomer.base_environment(tmp_path / "home") | {
        "PATH": f"{tools}:{kts_bin}:{newcomer.NEWCOMER_PATH}",
        "BOOTSTRAP": broker.bootstrap,
    }
    port = free_port()  # where kts will serve: the operator's choice, known before it runs
    kts_url = f"http://127.0.0.1:{port}"
    env["KTS_SERVER"] = kts_url
    processes: list[subprocess.Popen[bytes]] = []

    def between_steps(block: CodeBlock) -> None:
        if block is user_and_token:  # step 4: kts serves
            _start_kts(broker, tmp_path, port, processes)
        if block is client and (work / "token.json").exists():
            # "Brokers learn of a new token from ZooKeeper within moments": wait for that, not for a time.
            broker.wait_for_login(_token(work), mechanisms=("SCRAM-SHA-512",))

    try:
        runs = newcomer.run_blocks(blocks, work, env, tmp_path / "shell-state", before=between_steps)
        failed = [run for run in runs if run.failed]
        assert not failed, "\n".join(run.report() for run in failed)

        token = _token(work)
        listed = runs[-1]
        assert "Authentication failed" not in listed.output
        # The negative control: the same file with another HMAC is refused by the broker.
        wrong = (work / "token-client.properties").read_text().replace(token.password, "A" * 86 + "==")
        (work / "wrong-token.properties").write_text(wrong)
        refused = subprocess.run(
            [
                str(tools / "kafka-topics.sh"),
                "--bootstrap-server",
                broker.bootstrap,
                "--command-config",
                str(work / "wrong-token.properties"),
                "--list",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert refused.returncode != 0
        assert "Authentication failed" in refused.stdout + refused.stderr
        # What the brokers see: alice's token, made by kts, and alice a SCRAM user of theirs.
        described = broker.tokens("--describe", "--owner-principal", "User:alice")
        assert token.username in described.stdout
        broker.login(Credentials("alice", _password(work / "alice.properties")))
        # kts serve made no admin from KTS_ADMIN_PASSWORD (kts dev's variable only).
        refused_admin = httpx.get(f"{kts_url}/v1/tokens", auth=("admin", "not-read-by-kts-serve"), timeout=30)
        assert refused_admin.status_code == 401
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)


def _password(properties: Path) -> str:
    password: str = javaproperties.loads(properties.read_text())["password"]
    return password
