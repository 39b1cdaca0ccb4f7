"""Start-up failures of kts on the Kafka protocol, named without hammering the brokers (issue 34, item 4): a refused
login of kts's own principal ends the start with one line after at most 3 authentication attempts (counted in the
real KRaft broker's log, which logs each failed authentication); unreachable brokers are named, and the wait shown
as it goes. No traceback in either. The durations are printed for the record, never asserted (a loaded machine)."""

from __future__ import annotations

import subprocess
import time

import pytest

from app.cli.server.embedded_zookeeper import free_port
from app.domain.jaas import SCRAM_LOGIN_MODULE
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env
from tests.kafka.brokers import RunningBroker

FAILED_AUTHENTICATION = "Failed authentication with"


def _start(
    bootstrap: str, jaas: str, secret: str, timeout_ms: int = 30_000
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = kts_env(
        KTS_HTTP_LISTENERS=f"http://127.0.0.1:{free_port()}",
        KTS_BOOTSTRAP_SERVERS=bootstrap,
        KTS_ADMIN_SECURITY_PROTOCOL="SASL_PLAINTEXT",
        KTS_ADMIN_SASL_MECHANISM="SCRAM-SHA-512",
        KTS_ADMIN_SASL_JAAS_CONFIG=jaas,
        KTS_ADMIN_REQUEST_TIMEOUT_MS=str(timeout_ms),
        KTS_DELEGATION_TOKEN_SECRET_KEY=secret,
        KTS_LOG_FORMAT="text",
    )
    started = time.monotonic()
    finished = subprocess.run([*KTS, "serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return finished, time.monotonic() - started


def _no_traceback(finished: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in finished.stdout + finished.stderr


@pytest.mark.kafka
def test_a_wrong_password_of_kts_own_login_ends_the_start_after_at_most_3_attempts(
    kafka_kraft_broker: RunningBroker,
) -> None:
    broker = kafka_kraft_broker
    jaas = f'{SCRAM_LOGIN_MODULE} required username="{broker.kts.name}" password="{broker.kts.password}-wrong";'
    before = broker.log_text().count(FAILED_AUTHENTICATION)
    finished, seconds = _start(broker.bootstrap, jaas, broker.secret)
    time.sleep(1)  # the broker logs the last refusal as it closes the connection
    attempts = broker.log_text().count(FAILED_AUTHENTICATION) - before
    print(f"wrong password: exit {finished.returncode} after {seconds:.1f} s, {attempts} failed authentications")
    print(f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr}")
    assert finished.returncode == 1
    assert f"refused kts's login as SCRAM-SHA-512 user '{broker.kts.name}'" in finished.stderr
    assert 1 <= attempts <= 3
    _no_traceback(finished)
    assert broker.kts.password not in finished.stdout + finished.stderr


def test_unreachable_brokers_are_named_and_the_wait_shown() -> None:
    unreachable = f"127.0.0.1:{free_port()}"  # nothing listens there
    jaas = f'{SCRAM_LOGIN_MODULE} required username="kts" password="kts-secret";'
    finished, seconds = _start(unreachable, jaas, SECRET, timeout_ms=8_000)
    print(f"unreachable: exit {finished.returncode} after {seconds:.1f} s")
    print(f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr}")
    assert finished.returncode == 1
    assert f"waiting for {unreachable}" in finished.stdout
    assert f"cannot reach the brokers at {unreachable} within admin.request.timeout.ms (8000 ms)" in finished.stderr
    assert "kts-secret" not in finished.stdout + finished.stderr
    _no_traceback(finished)


@pytest.mark.kafka
def test_a_principal_without_its_grants_is_told_every_one_missing_in_one_line(
    kafka_kraft_broker: RunningBroker,
) -> None:
    bare = kafka_kraft_broker.new_user("kts-bare")
    jaas = f'{SCRAM_LOGIN_MODULE} required username="{bare.name}" password="{bare.password}";'
    finished, _ = _start(kafka_kraft_broker.bootstrap, jaas, kafka_kraft_broker.secret)
    print(f"stdout:\n{finished.stdout}\nstderr:\n{finished.stderr}")
    assert finished.returncode == 1
    line = finished.stderr.strip().splitlines()[-1]
    assert line.startswith(f"kts: kts's principal User:{bare.name} lacks grants on the cluster")
    for grant in ("CreateTokens on User", "DescribeTokens on User", "Alter on Cluster", "Describe on Cluster"):
        assert grant in line
    assert f"kafka-acls.sh --bootstrap-server {kafka_kraft_broker.bootstrap}" in line
    _no_traceback(finished)
    assert bare.password not in finished.stdout + finished.stderr
