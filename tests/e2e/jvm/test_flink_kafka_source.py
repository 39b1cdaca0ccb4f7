"""A Flink job on a MiniCluster reads a topic with flink-connector-kafka's KafkaSource, taking kts tokens by
configuration only, across token replacements: kts's provider on the JobManager creates, renews and replaces a
short-lived token, Flink ships it to the TaskManager, kts's receiver publishes it, and the Kafka consumer's
callback handler hands it out at every (re-)authentication. The broker is a 3.9 broker in ZooKeeper mode of the
test's own, with ``connections.max.reauth.ms`` so that established connections re-authenticate; kts runs on its
ZooKeeper. Prints the seconds from each replacement to the first record read with the new token, and the number of
tokens the job created."""

from __future__ import annotations

import re
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaProducer

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from tests.api.helpers import eventually
from tests.conftest import SECRET, write_properties
from tests.e2e.jvm.flink_classpath import flink_libs
from tests.e2e.kafka.conftest import Kts, start_kts_beside, stop_all
from tests.kafka.brokers import LISTENER, RunningBroker, start_zookeeper_mode_broker

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]

JOB = Path(__file__).parent / "flink" / "KafkaReadJob.java"
# Short lifetimes so that the provider replaces the token within about half a minute: Flink asks it again at
# 0.75 of the time to each expiry, and it replaces the token past 0.8 of the maximum lifetime.
EXPIRY_MS, MAX_LIFETIME_MS = 8_000, 24_000
REAUTH_MS = 5_000  # the broker ends every session after 5 s unless the client re-authenticates
REPLACEMENTS = 2
PATIENCE_S = 300.0
CLUSTER = "orders"
_HMAC = re.compile(r"[A-Za-z0-9+/]{86}==")
_LINE = re.compile(r"^(\d{13}) ")
_READ = re.compile(r"^read r(\d+) at (\d{13})$")

LOG4J2 = """\
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{UNIX_MILLIS}} %-5p %c - %m%n
logger.kts.name = kts.jvm
logger.kts.level = DEBUG
"""


@dataclass
class FlinkStack:
    broker: RunningBroker
    kts: Kts


@pytest.fixture(scope="module")
def flink_stack(zookeeper: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlinkStack]:
    """A broker of the module's own (re-authentication on), and kts on its chroot with short token lifetimes."""
    directory = tmp_path_factory.mktemp("flink-kafka")
    chroot = f"{zookeeper.connect_string}/kafka-flink-{uuid.uuid4().hex[:12]}"
    broker = start_zookeeper_mode_broker(
        directory / "broker", chroot, SECRET, extra_properties={"connections.max.reauth.ms": str(REAUTH_MS)}
    )
    processes: list[subprocess.Popen[str]] = []
    try:
        kts = start_kts_beside(
            processes,
            directory,
            chroot,
            SECRET,
            KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS="1000",
            KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS=str(EXPIRY_MS),
            KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS=str(MAX_LIFETIME_MS),
        )
        yield FlinkStack(broker, kts)
    finally:
        stop_all(processes)
        broker.broker.stop()


class Producer:
    """Writes r0, r1, ... to the topic as the super user, one record every 200 ms, until stopped."""

    def __init__(self, broker: RunningBroker, topic: str) -> None:
        self.producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            security_protocol=LISTENER,
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=broker.admin.name,
            sasl_plain_password=broker.admin.password,
        )
        self.topic = topic
        self.sent = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(0.2):
            self.producer.send(self.topic, f"r{self.sent}".encode()).get(timeout=30)
            self.sent += 1

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(60)
        self.producer.close()


@dataclass(frozen=True)
class Replacement:
    at_ms: int
    old: str
    new: str


class JobLog:
    """What the job printed (records read) and logged (the provider's tokens, the receiver's publications, the
    client's authentications), each line with its time in epoch milliseconds."""

    def __init__(self, stdout: Path, log: Path) -> None:
        self.stdout, self.log = stdout, log

    def lines(self) -> list[tuple[int, str]]:
        if not self.log.exists():
            return []
        parsed = []
        for line in self.log.read_text(errors="replace").splitlines():
            match = _LINE.match(line)
            if match:
                parsed.append((int(match.group(1)), line[match.end() :]))
        return parsed

    def reads(self) -> list[tuple[int, int]]:
        """(record number, read at) in the order read."""
        text = self.stdout.read_text(errors="replace") if self.stdout.exists() else ""
        return [(int(m.group(1)), int(m.group(2))) for m in map(_READ.match, text.splitlines()) if m]

    def created(self) -> list[str]:
        """The tokens the provider created (the first and each replacement), in order."""
        found = []
        for _, line in self.lines():
            if match := re.search(r"cluster \S+: created token (\S+)", line):
                found.append(match.group(1))
            elif match := re.search(r"cluster \S+: token (\S+) replaces token", line):
                found.append(match.group(1))
        return found

    def replacements(self) -> list[Replacement]:
        return [
            Replacement(at, m.group(2), m.group(1))
            for at, line in self.lines()
            if (m := re.search(r"cluster \S+: token (\S+) replaces token (\S+)", line))
        ]

    def first_authentication_with(self, token_id: str) -> int | None:
        """When a Kafka client of the job first logged in with ``token_id`` (kts's callback handler logs the token
        it hands out at each authentication and re-authentication)."""
        return next((at for at, line in self.lines() if f"Kafka login with kts token {token_id}" in line), None)


def test_a_flink_kafka_source_reads_across_token_replacements(
    flink_stack: FlinkStack, kts_jvm_jar: Path, tmp_path: Path
) -> None:
    broker, kts = flink_stack.broker, flink_stack.kts
    user = broker.new_user("flink")
    topic = broker.create_topic()
    group = f"kts-flink-{uuid.uuid4().hex[:8]}"
    principal = f"User:{user.name}"
    broker.acls("--add", "--allow-principal", principal, "--operation", "Read", "--topic", topic)
    broker.acls("--add", "--allow-principal", principal, "--operation", "Read", "--group", group)

    # The JobManager's kts login: a password file, on the JobManager only. Nothing on the TaskManager side.
    password_file = tmp_path / "kts-password"
    password_file.write_text(user.password)
    password_file.chmod(0o600)
    job_id = uuid.uuid4().hex
    flink_conf = write_properties(
        tmp_path / "flink.properties",
        {
            f"security.delegation.token.provider.kts.clusters.{CLUSTER}.url": kts.url,
            f"security.delegation.token.provider.kts.clusters.{CLUSTER}.user": user.name,
            f"security.delegation.token.provider.kts.clusters.{CLUSTER}.password.file": str(password_file),
            "security.delegation.tokens.renewal.retry.backoff": "2 s",
            "pipeline.name": "kts-flink-proof",
            "$internal.pipeline.job-id": job_id,
        },
    )
    kafka_conf = write_properties(
        tmp_path / "kafka.properties",
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": LISTENER,
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'tokenauth="true" kts.registry.key="{CLUSTER}";'
            ),
            "sasl.client.callback.handler.class": "kts.jvm.kafka.KtsTokenCallbackHandler",
            "group.id": group,
        },
    )
    for conf in (flink_conf, kafka_conf):
        assert user.password not in conf.read_text()

    libs = flink_libs()
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "-cp", f"{libs}/*", "-d", str(classes), str(JOB)], check=True, capture_output=True, timeout=300
    )
    log = tmp_path / "job.log"
    (tmp_path / "log4j2.properties").write_text(LOG4J2.format(log=log))
    stdout, stderr = tmp_path / "job.out", tmp_path / "job.err"
    producer = Producer(broker, topic)
    job = subprocess.Popen(
        [
            "java",
            "-Xmx768m",
            "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={tmp_path / 'log4j2.properties'}",
            "-cp",
            f"{kts_jvm_jar}:{libs}/*:{classes}",
            "KafkaReadJob",
            str(flink_conf),
            str(kafka_conf),
            topic,
        ],
        stdout=stdout.open("w"),
        stderr=stderr.open("w"),
        text=True,
    )
    job_log = JobLog(stdout, log)
    try:

        def replaced_and_read() -> bool:
            assert job.poll() is None, f"the Flink job ended: {stderr.read_text()[-3000:]}\n{_tail(log)}"
            replacements = job_log.replacements()
            if len(replacements) < REPLACEMENTS:
                return False
            last = job_log.first_authentication_with(replacements[-1].new)
            return last is not None and any(at > last for _, at in job_log.reads())

        eventually(replaced_and_read, timeout_s=PATIENCE_S)
    finally:
        producer.stop()
        job.terminate()
        try:
            job.wait(30)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait(30)

    reads = job_log.reads()
    created = job_log.created()
    replacements = job_log.replacements()
    assert [number for number, _ in reads] == list(range(len(reads))), "records lost or read twice"
    lines = [f"flink job {job_id}: {len(reads)} records read, {len(created)} tokens created: {created}"]
    for replacement in replacements:
        authenticated = job_log.first_authentication_with(replacement.new)
        assert authenticated is not None
        first = next(at for _, at in reads if at > authenticated)
        lines.append(
            f"token {replacement.new} replaced {replacement.old}: first authentication with it after "
            f"{(authenticated - replacement.at_ms) / 1000:.1f} s, first record read with it after "
            f"{(first - replacement.at_ms) / 1000:.1f} s"
        )
    print("\n".join(lines))

    # kts's audit: every token the job created, owned by the JobManager's login and traced to the job, none other.
    query = {"action": "token.create", "outcome": "succeeded", "jobFramework": "flink", "jobId": job_id}
    events = kts.request("GET", "/v1/audit", broker.admin, params=query).json()["events"]
    assert sorted(event["tokenId"] for event in events) == sorted(created)
    assert {event["owner"] for event in events} == {principal}
    assert {event["job"]["name"] for event in events} == {"kts-flink-proof"}
    query = {"action": "token.create", "outcome": "succeeded", "principal": principal}
    assert len(kts.request("GET", "/v1/audit", broker.admin, params=query).json()["events"]) == len(created)
    # No HMAC in anything the job wrote.
    for path in (stdout, stderr, log):
        assert not _HMAC.search(path.read_text(errors="replace")), path.name


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
