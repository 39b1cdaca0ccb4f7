"""Proofs that need a ZooKeeper-mode broker of their own: one whose sweeper runs once an hour (so that only
kts's sweeper can delete a token), and one with another secret."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.cli.client.kafka_login import Credentials, LoginError
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, free_port
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env
from tests.e2e.kafka.conftest import described_tokens, start_kts_beside, stop_all
from tests.kafka.brokers import RunningBroker, start_zookeeper_mode_broker

pytestmark = pytest.mark.kafka


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    stop_all(started)


@pytest.fixture
def chroot(zookeeper: EmbeddedZooKeeper) -> str:
    return f"{zookeeper.connect_string}/kafka-own-{uuid.uuid4().hex[:12]}"


@contextmanager
def _own_broker(tmp_path: Path, chroot: str, secret: str, **properties: str) -> Iterator[RunningBroker]:
    broker = start_zookeeper_mode_broker(tmp_path / "broker", chroot, secret, extra_properties=properties)
    try:
        yield broker
    finally:
        broker.broker.stop()


def test_a_token_kts_sweeper_deletes_is_refused_at_login(
    tmp_path: Path, chroot: str, processes: list[subprocess.Popen[str]]
) -> None:
    """The broker's own sweep is an hour away; kts's runs every second and deletes the token at its maximum
    lifetime, with a notification, and the broker drops it. (Kafka checks no expiry at login: until the token
    znode goes, the broker takes it.)"""
    hourly = {"delegation.token.expiry.check.interval.ms": "3600000"}
    with _own_broker(tmp_path, chroot, SECRET, **hourly) as broker:
        kts = start_kts_beside(
            processes, tmp_path, chroot, SECRET, KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS="1000"
        )
        owner = broker.new_user("swept")
        token = kts.create_token(owner, maxLifetimeMs=5000)
        credentials = Credentials(str(token["tokenId"]), str(token["hmac"]), token=True)
        broker.wait_for_login(credentials)
        answers: list[str] = []

        def refused() -> bool:
            try:
                broker.login(credentials)
            except LoginError as exc:
                answers.append(str(exc))
                return True
            return False

        eventually(refused, timeout_s=60)
        query = {"tokenId": token["tokenId"], "action": "token.sweep"}
        sweeps = kts.request("GET", "/v1/audit", broker.admin, params=query).json()["events"]
        print(f"kts's sweeper: {sweeps}\nthe broker then answered: {answers[-1]}")
        assert [event["outcome"] for event in sweeps if event["outcome"] != "pending"] == ["succeeded"]
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in answers[-1]


def test_a_broker_with_another_secret_refuses_kts_tokens_and_kts_names_the_mismatch(
    tmp_path: Path, chroot: str, processes: list[subprocess.Popen[str]]
) -> None:
    # kts first, before the cluster's first broker (as zookeeper.cluster.required=false allows): it records the
    # fingerprint of the secret the cluster's tokens are to use.
    kts = start_kts_beside(processes, tmp_path, chroot, SECRET, KTS_ZOOKEEPER_CLUSTER_REQUIRED="false")
    other = "another-secret-key"
    with _own_broker(tmp_path, chroot, other) as broker:
        owner = broker.new_user("mismatched")
        token = kts.create_token(owner)
        rows: list[str] = []

        def described() -> bool:
            output = broker.tokens("--describe", "--owner-principal", f"User:{owner.name}").stdout
            rows[:] = [output]
            return [row.token_id for row in described_tokens(output)] == [token["tokenId"]]

        eventually(described, timeout_s=60)  # the broker knows the token ...
        (row,) = described_tokens(rows[-1])
        assert row.hmac != token["hmac"]  # ... and derives another HMAC from its secret
        answer = broker.login_error(Credentials(str(token["tokenId"]), str(token["hmac"]), token=True))

        port = free_port()
        refused = subprocess.run(
            [*KTS, "serve", "--config", str(broker.directory / "server.properties")],
            cwd=ROOT,
            env=kts_env(KTS_HTTP_LISTENERS=f"http://127.0.0.1:{port}"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        print(f"the broker answered: {answer}\nkts serve with the broker's server.properties: {refused.stderr}")
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in answer
        assert refused.returncode == 1, refused.stdout + refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line.startswith("kts: delegation.token.secret.key differs from the one this cluster's tokens")
        assert other not in line and SECRET not in line
