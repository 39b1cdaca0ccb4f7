"""A Flink job on a MiniCluster reads a topic with flink-connector-kafka's KafkaSource, taking kts tokens by
configuration only, across two token replacements, on Kafka 3.9 in ZooKeeper mode and 4.4 in KRaft mode: kts's
provider on the JobManager logs in to kts with a projected JWT and creates, renews and replaces a short-lived token,
Flink ships it to the TaskManager, kts's receiver publishes it, and the Kafka consumer's callback handler hands it
out at every authentication. No broker setting is needed for the running connections to take the new token: a
broker bounds the session of a token-authenticated connection by the token's expiry at login (KIP-368), so the
client re-authenticates before then. The job runs as a cluster runs it: this JVM's classpath is the cluster's lib/
(Flink, flink-connector-kafka, kafka-clients, kts-jvm), and the job is submitted over the MiniCluster's REST API with
its own jars (its classes and bundled copies of kafka-clients and kts-jvm), which Flink's job class loader loads,
with the documented parent-first setting. Prints the seconds from each replacement to the first record read with
the new token, and the number of tokens the job created."""

from __future__ import annotations

import re
import subprocess
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaProducer

from tests.api.helpers import eventually
from tests.conftest import write_properties
from tests.e2e.jvm.conftest import Stack
from tests.e2e.jvm.flink_classpath import flink_libs
from tests.kafka.brokers import LISTENER, RunningBroker

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(600)]

JOB = Path(__file__).parent / "flink" / "KafkaReadJob.java"
# Tokens of 24 s (kts's default expiry is longer, so the maximum is the expiry): Flink asks the provider again at
# 0.75 of the time to it, and the provider replaces the token past 0.8 of it.
MAX_LIFETIME_MS = 24_000
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
appender.file.layout.pattern = %d{{UNIX_MILLIS}} %-5p [%t] %c - %m%n
logger.kts.name = kts.jvm
logger.kts.level = DEBUG
"""


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

    def consumer_logins(self) -> list[tuple[int, str]]:
        """(when, token id) of each login of the job's Kafka consumer (on the TaskManager; not the source's admin
        client on the JobManager): kts's callback handler logs the token it hands out at each authentication and
        re-authentication, on the thread of the client that asks."""
        logins = []
        for at, line in self.lines():
            match = re.search(r"Kafka login with kts token (\S+)", line)
            if match and "[kafka-admin-client-thread" not in line:
                logins.append((at, match.group(1)))
        return logins

    def live_replacements(self) -> list[Replacement]:
        """The replacements of a token the consumer had logged in with: made while the job was reading."""
        logins = self.consumer_logins()
        return [r for r in self.replacements() if any(token == r.old and at < r.at_ms for at, token in logins)]

    def first_login_with(self, token_id: str) -> int | None:
        return next((at for at, token in self.consumer_logins() if token == token_id), None)


def test_a_flink_kafka_source_reads_across_token_replacements(stack: Stack, kts_jvm_jar: Path, tmp_path: Path) -> None:
    broker = stack.broker
    # The JobManager's kts login: its pod's projected service-account JWT. Nothing of kts on the TaskManager side.
    sub, jwt_file = stack.workload(tmp_path)
    principal = f"User:{sub}"
    topic = broker.create_topic()
    group = f"kts-flink-{uuid.uuid4().hex[:8]}"
    broker.acls("--add", "--allow-principal", principal, "--operation", "Read", "--topic", topic)
    broker.acls("--add", "--allow-principal", principal, "--operation", "Read", "--group", group)
    job_id = uuid.uuid4().hex
    prefix = f"security.delegation.token.provider.kts.clusters.{CLUSTER}."
    flink_conf = write_properties(
        tmp_path / "flink.properties",
        {
            f"{prefix}url": stack.url,
            f"{prefix}jwt.file": str(jwt_file),
            f"{prefix}max.lifetime.ms": str(MAX_LIFETIME_MS),
            f"{prefix}replace.overlap.ms": "3000",
            "security.delegation.tokens.renewal.retry.backoff": "2 s",
            "classloader.parent-first-patterns.additional": "org.apache.kafka.;kts.jvm.",
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
        assert "password" not in conf.read_text()

    libs = flink_libs()
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "-cp", f"{libs}/*", "-d", str(classes), str(JOB)], check=True, capture_output=True, timeout=300
    )
    job_jar = tmp_path / "job.jar"
    subprocess.run(["jar", "cf", str(job_jar), "-C", str(classes), "."], check=True, capture_output=True, timeout=120)
    # The job's own jars, as a fat jar would bundle them: its classes, and copies of kafka-clients and kts-jvm that
    # the parent-first setting must keep from being used (the cluster's lib/ has them: this JVM's classpath).
    (kafka_clients,) = libs.glob("kafka-clients-*.jar")
    job_jars = [str(job_jar), str(kafka_clients), str(kts_jvm_jar)]
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
            *job_jars,
        ],
        stdout=stdout.open("w"),
        stderr=stderr.open("w"),
        text=True,
    )
    job_log = JobLog(stdout, log)
    try:

        def replaced_and_read() -> bool:
            assert job.poll() is None, f"the Flink job ended: {stderr.read_text()[-3000:]}\n{_tail(log)}"
            replacements = job_log.live_replacements()
            if len(replacements) < REPLACEMENTS:
                return False
            last = job_log.first_login_with(replacements[-1].new)
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

    # The job's code came from its jar, through Flink's job class loader; the handler, parent-first, from lib/.
    (loaders,) = [line for line in stdout.read_text().splitlines() if line.startswith("loaders ")]
    assert loaders.startswith("loaders job org.apache.flink."), loaders
    assert loaders.endswith(" handler jdk.internal.loader.ClassLoaders$AppClassLoader"), loaders
    reads = job_log.reads()
    created = job_log.created()
    replacements = job_log.live_replacements()
    assert [number for number, _ in reads] == list(range(len(reads))), "records lost or read twice"
    lines = [f"[{stack.name}] flink job {job_id}: {len(reads)} records read, {len(created)} tokens created: {created}"]
    for replacement in replacements:
        authenticated = job_log.first_login_with(replacement.new)
        assert authenticated is not None
        first = next(at for _, at in reads if at > authenticated)
        lines.append(
            f"[{stack.name}] token {replacement.new} replaced {replacement.old}: "
            f"the consumer's first login with it after "
            f"{(authenticated - replacement.at_ms) / 1000:.1f} s, first record read with it after "
            f"{(first - replacement.at_ms) / 1000:.1f} s"
        )
    print("\n".join(lines))

    # kts's audit: every token the job created, owned by the JobManager's identity and traced to the job, none other.
    events = stack.audit(action="token.create", outcome="succeeded", jobFramework="flink", jobId=job_id)
    assert sorted(event["tokenId"] for event in events) == sorted(created)
    assert {event["owner"] for event in events} == {principal}
    assert {event["job"]["name"] for event in events} == {"kts-flink-proof"}
    assert len(stack.audit(action="token.create", outcome="succeeded", principal=principal)) == len(created)
    # No HMAC in anything the job wrote.
    for path in (stdout, stderr, log):
        assert not _HMAC.search(path.read_text(errors="replace")), path.name


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""
