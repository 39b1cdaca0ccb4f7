"""kts beside each real broker, logging workloads in with JWTs (no password on the worker), and the tests' Java
workload (KtsConsumer.java) run with build/kts-jvm.jar."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import start_kts
from tests.e2e.kafka.conftest import start_kts_beside, stop_all
from tests.jwt_material import AUDIENCE, ISSUER, JwtKey, jwks, project_token
from tests.kafka.brokers import RunningBroker
from tests.kts_jvm import compile_java

CONSUMER = Path(__file__).with_name("KtsConsumer.java")
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
HANDLER = "kts.jvm.kafka.KtsTokenCallbackHandler"
RENEW_PERIOD_MS = 8_000  # kts's delegation.token.expiry.time.ms beside the ZooKeeper-mode broker


@dataclass
class Stack:
    """A broker, kts in front of its tokens, and the key kts trusts for workload JWTs."""

    name: str
    broker: RunningBroker
    url: str
    signer: JwtKey

    def workload(self, directory: Path) -> tuple[str, Path]:
        """A workload identity of its own (``User:<sub>``) and the file its projected JWT is in."""
        sub = f"system:serviceaccount:etl:jvm-{uuid.uuid4().hex[:8]}"
        tokens = directory / "projected"
        tokens.mkdir()
        return sub, project_token(tokens, 1, self.signer.mint(sub=sub, lifetime_s=3600))

    def audit(self, **query: str) -> list[dict[str, Any]]:
        admin = self.broker.admin
        response = httpx.get(
            f"{self.url}/v1/audit", params={"limit": "1000", **query}, auth=(admin.name, admin.password), timeout=30
        )
        assert response.status_code == 200, response.text
        return list(response.json()["events"])


@pytest.fixture(scope="module", params=["zookeeper-3.9", "kraft-4.4"])
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """kts on the ZooKeeper-mode broker's chroot (3.9), its tokens renewed every few seconds; or on the KRaft broker
    through the Kafka protocol (4.4), whose tokens (the broker's) need no renewal within their 20 s."""
    directory = tmp_path_factory.mktemp(f"kts-{request.param}")
    signer = JwtKey.rsa("cluster-key")
    jwks_file = directory / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(signer)))
    jwt_settings = {
        "KTS_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL": jwks_file.as_uri(),
        "KTS_SASL_OAUTHBEARER_EXPECTED_ISSUER": ISSUER,
        "KTS_SASL_OAUTHBEARER_EXPECTED_AUDIENCE": AUDIENCE,
    }
    processes: list[subprocess.Popen[str]] = []
    try:
        if request.param.startswith("zookeeper"):
            broker: RunningBroker = request.getfixturevalue("kafka_zk_broker")
            assert broker.zookeeper_connect is not None
            kts = start_kts_beside(
                processes,
                directory,
                broker.zookeeper_connect,
                broker.secret,
                KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS="1000",
                # tokens end 8 s after their creation or last renewal: renewals come between the replacements
                KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS=str(RENEW_PERIOD_MS),
                **jwt_settings,
            )
            url = kts.url
        else:
            broker = request.getfixturevalue("kafka_kraft_broker")
            admin = broker.admin
            url = start_kts(
                processes,
                directory,
                f"kts-{uuid.uuid4().hex[:6]}",
                KTS_BOOTSTRAP_SERVERS=broker.bootstrap,
                KTS_DELEGATION_TOKEN_SECRET_KEY=broker.secret,
                KTS_ADMIN_SECURITY_PROTOCOL="SASL_PLAINTEXT",
                KTS_ADMIN_SASL_MECHANISM="SCRAM-SHA-512",
                KTS_ADMIN_SASL_JAAS_CONFIG=broker.kts_jaas,  # kts's own login, never a caller's
                KTS_SUPER_USERS=f"User:{admin.name}",
                KTS_AUTH_FAILURES_MAX="0",
                **jwt_settings,
            )
        yield Stack(request.param, broker, url, signer)
    finally:
        stop_all(processes)


@dataclass
class Run:
    """What KtsConsumer printed: its events (one JSON object a line) and its exit code."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == kind]

    def first_logins(self) -> dict[str, int]:
        """Each token id that logged in, with the time of its first login, in order."""
        seen: dict[str, int] = {}
        for event in self.of("login"):
            seen.setdefault(event["tokenId"], event["t"])
        return seen


def run_consumer(
    broker: RunningBroker, jar: Path, config: Path, topic: str, *, tokens: int, max_lifetime_ms: int, deadline_s: int
) -> Run:
    """KtsConsumer.java with only ``config`` (the callback handler and its JAAS options), until ``tokens``
    distinct tokens logged in and records were read past the last replaced one's maximum lifetime."""
    classpath = f"{broker.classpath}:{jar}"
    classes = compile_java(CONSUMER, classpath, broker.directory / "kts-jvm-consumer")
    log_config = broker.directory / "kts-jvm-log4j.properties"
    log_config.write_text(
        "log4j.rootLogger=WARN, stderr\nlog4j.logger.kts.jvm=INFO\n"
        "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\nlog4j.appender.stderr.Target=System.err\n"
        "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n\n"
    )
    log2_config = broker.directory / "kts-jvm-log4j2.properties"
    log2_config.write_text(
        "rootLogger.level=WARN\nrootLogger.appenderRef.stderr.ref=STDERR\n"
        "logger.kts.name=kts.jvm\nlogger.kts.level=INFO\n"
        "appender.stderr.type=Console\nappender.stderr.name=STDERR\nappender.stderr.target=SYSTEM_ERR\n"
        "appender.stderr.layout.type=PatternLayout\nappender.stderr.layout.pattern=%d{ISO8601} %p %c{1}: %m%n\n"
    )
    out, err = config.parent / "consumer.out", config.parent / "consumer.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [
                "java",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                f"-Dlog4j.configuration=file:{log_config}",
                f"-Dlog4j2.configurationFile={log2_config}",
                "-cp",
                f"{classpath}:{classes}",
                "KtsConsumer",
                str(config),
                topic,
                str(tokens),
                str(max_lifetime_ms),
                str(deadline_s),
            ],
            stdout=stdout,
            stderr=stderr,
        )
        try:
            returncode = process.wait(deadline_s + 120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    events = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    return Run(returncode, events, err.read_text())
