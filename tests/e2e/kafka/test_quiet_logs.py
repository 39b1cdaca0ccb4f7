"""A normal session logs no ERROR or WARNING line, on both backends (issue 34, item 3), and ``GET /v1/cluster/status``
(what ``kts cluster status`` prints, item 5) tells what the cluster is. ``kts serve`` beside the real brokers:
logins right and wrong, a token created, described, renewed and expired; the test reads kts's own log (JSON lines:
kts's loggers and kafka-python's alike) and fails on any line at WARNING or above.

Before the fix, on KRaft every first Basic login logged kafka-python's ``Abort (KafkaConnectionError)`` and
``Connection lost`` at ERROR (kts closed its password-check connection before kafka-python counted it as set up),
and a wrong password logged six ERROR lines (the broker closing the connection, as it answers a refused login)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.cli.client.cluster import status_text
from app.cli.server.kafka_broker.broker import User
from app.domain.jaas import SCRAM_LOGIN_MODULE as SCRAM_LOGIN
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import start_kts
from tests.e2e.kafka.conftest import Kts, stop_all
from tests.kafka.brokers import ADMIN, READY_TIMEOUT_S, RunningBroker, _scram_login_succeeds, start_kraft_broker

LOUD = ("WARNING", "ERROR", "CRITICAL")


def _session(kts: Kts, owner: User) -> None:
    wrong = User(owner.name, owner.password + "-wrong")
    assert kts.request("GET", "/v1/tokens", wrong).status_code == 401
    token = kts.create_token(owner)
    assert kts.request("GET", "/v1/tokens", wrong).status_code == 401
    described = kts.request("GET", f"/v1/tokens/{token['tokenId']}", owner)
    assert described.status_code == 200, described.text
    renewed = kts.request("POST", "/v1/tokens/renew", owner, json={"hmac": token["hmac"], "renewTimePeriodMs": 60_000})
    assert renewed.status_code == 200, renewed.text
    expired = kts.request("POST", "/v1/tokens/expire", owner, json={"hmac": token["hmac"], "expiryTimePeriodMs": -1})
    assert expired.status_code == 200, expired.text
    unknown = User(f"nobody-{owner.name}", "not-a-password")
    assert kts.request("GET", "/v1/tokens", unknown).status_code == 401


def _status(kts: Kts, admin: User) -> dict[str, Any]:
    """``GET /v1/cluster/status`` as a super user (issue 34 item 5: what ``kts cluster status`` prints)."""
    answer = kts.request("GET", "/v1/cluster/status", admin)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    print(f"cluster status: {body}")
    print(status_text(body))
    return body


def _loud_lines(log_path: Path) -> list[str]:
    loud = []
    for line in log_path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # anything but a JSON line (a traceback, a library printing) is loud too
            loud.append(line)
            continue
        if entry.get("level") in LOUD:
            loud.append(line)
    return loud


def _assert_quiet(log_path: Path) -> None:
    text = log_path.read_text()
    print(f"kts's log:\n{text}")
    assert _loud_lines(log_path) == []
    assert '"level": "INFO"' in text  # the log was written (and read) at all


@pytest.mark.kafka
def test_a_normal_session_on_kraft_logs_no_error_or_warning(kafka_kraft_broker: RunningBroker, tmp_path: Path) -> None:
    processes: list[subprocess.Popen[str]] = []
    broker = kafka_kraft_broker
    # A principal of this kts's own, with the documented grants: other tests' kts instances on the shared broker
    # log in as broker.kts with audit databases of their own, and their tokens would rightly be orphans here.
    own = broker.new_user("kts-quiet")
    principal = f"User:{own.name}"
    broker.acls(
        "--add",
        "--allow-principal",
        principal,
        "--operation",
        "CreateTokens",
        "--operation",
        "DescribeTokens",
        "--user-principal",
        "*",
    )
    broker.acls("--add", "--allow-principal", principal, "--operation", "Alter", "--operation", "Describe", "--cluster")
    try:
        url = start_kts(
            processes,
            tmp_path,
            "kts-quiet-kraft",
            KTS_BOOTSTRAP_SERVERS=broker.bootstrap,
            KTS_ADMIN_SECURITY_PROTOCOL="SASL_PLAINTEXT",
            KTS_ADMIN_SASL_MECHANISM="SCRAM-SHA-512",
            KTS_ADMIN_SASL_JAAS_CONFIG=f'{SCRAM_LOGIN} required username="{own.name}" password="{own.password}";',
            KTS_DELEGATION_TOKEN_SECRET_KEY=broker.secret,
            KTS_SUPER_USERS=f"User:{broker.admin.name}",
            KTS_AUTH_FAILURES_MAX="0",
        )
        kts = Kts(url, tmp_path / "kts-quiet-kraft.log")
        made = broker.new_user("quiet")
        _session(kts, User(made.name, made.password))
        status = _status(kts, User(broker.admin.name, broker.admin.password))
    finally:
        stop_all(processes)
    facts = status["cluster"]
    assert facts["mode"] == "kraft"
    assert facts["clusterId"]
    assert facts["nodes"] == [f"1 {broker.bootstrap}"]
    assert facts["metadataVersion"].startswith("feature level ")
    assert facts["principal"] == principal
    assert facts["secretCheck"].startswith("matches")
    assert status["checks"] == {"cluster": "ok", "tokens": "ok", "acls": "ok", "audit_database": "ok"}
    _assert_quiet(tmp_path / "kts-quiet-kraft.log")


@pytest.mark.kafka
def test_a_normal_session_on_zookeeper_logs_no_error_or_warning(kafka_zk_broker: RunningBroker, tmp_path: Path) -> None:
    assert kafka_zk_broker.zookeeper_connect is not None
    processes: list[subprocess.Popen[str]] = []
    try:
        url = start_kts(
            processes,
            tmp_path,
            "kts-quiet-zk",
            KTS_ZOOKEEPER_CONNECT=kafka_zk_broker.zookeeper_connect,
            KTS_DELEGATION_TOKEN_SECRET_KEY=kafka_zk_broker.secret,
            KTS_SUPER_USERS=f"User:{kafka_zk_broker.admin.name}",
            KTS_AUTH_FAILURES_MAX="0",
        )
        kts = Kts(url, tmp_path / "kts-quiet-zk.log")
        made = kafka_zk_broker.new_user("quiet")
        _session(kts, User(made.name, made.password))
        status = _status(kts, User(kafka_zk_broker.admin.name, kafka_zk_broker.admin.password))
    finally:
        stop_all(processes)
    facts = status["cluster"]
    assert facts["mode"] == "zookeeper"
    assert facts["clusterId"] == status["migration"]["clusterId"]
    assert facts["nodes"] == kafka_zk_broker.zookeeper_connect.partition("/")[0].split(",")
    assert facts["metadataVersion"] is None
    assert facts["secretCheck"].startswith("matches")
    assert status["migration"]["phase"] == "zookeeper"
    _assert_quiet(tmp_path / "kts-quiet-zk.log")


@pytest.mark.kafka
def test_a_broker_restart_under_kts_logs_no_error_or_warning(tmp_path: Path) -> None:
    """A KRaft broker of the test's own, restarted under a running kts: kts's connections are lost and reopened,
    and the sessions before and after log nothing louder than INFO."""
    broker = start_kraft_broker(tmp_path / "broker", SECRET)
    processes: list[subprocess.Popen[str]] = []
    admin = User(broker.admin.name, broker.admin.password)
    try:
        url = start_kts(
            processes,
            tmp_path,
            "kts-quiet-restart",
            KTS_BOOTSTRAP_SERVERS=broker.bootstrap,
            KTS_ADMIN_SECURITY_PROTOCOL="SASL_PLAINTEXT",
            KTS_ADMIN_SASL_MECHANISM="SCRAM-SHA-512",
            KTS_ADMIN_SASL_JAAS_CONFIG=broker.kts_jaas,
            KTS_DELEGATION_TOKEN_SECRET_KEY=broker.secret,
            KTS_SUPER_USERS=f"User:{broker.admin.name}",
            KTS_AUTH_FAILURES_MAX="0",
        )
        kts = Kts(url, tmp_path / "kts-quiet-restart.log")
        made = broker.new_user("quiet")
        _session(kts, User(made.name, made.password))
        broker.broker.stop()
        broker.broker.start(_scram_login_succeeds(ADMIN), timeout_s=READY_TIMEOUT_S)
        eventually(lambda: kts.request("GET", "/v1/tokens", admin).status_code == 200, timeout_s=120)
        _session(kts, User(made.name, made.password))
    finally:
        stop_all(processes)
        broker.broker.stop()
    _assert_quiet(tmp_path / "kts-quiet-restart.log")
