"""Spark takes kts tokens by configuration alone (docs/orchestrators.md#spark): PySpark 4.3 in local mode with
``spark.security.directCredentialProviders.enabled``, Spark's Kafka connector and build/kts-jvm.jar, against the real
brokers: Kafka 3.9 in ZooKeeper mode with kts on its ZooKeeper, and 4.4 in KRaft mode with kts on its
bootstrap.servers.

The job logs in to kts with a projected service-account JWT only: there is no Kafka password anywhere in its
configuration. A batch job reads and writes topics with a token kts makes for another owner (KIP-373,
``kts.owner``), and a streaming query keeps reading across token replacements with tokens of the job's own identity
(KRaft) or, as the job is submitted with ``--proxy-user`` there, of that user (ZooKeeper mode). The tokens are
short-lived: a 20 s maximum lifetime, renewed every few seconds where kts sets the period. One Spark session per
broker (it costs seconds and much CPU): the fixture runs the whole job in a process of its own
(tests/e2e/jvm/spark_kafka_job.py), and the tests read what it recorded."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from kafka import KafkaProducer

from app.cli.server.kafka_broker.broker import LISTENER
from app.domain.token_secret import TokenSecret
from tests.e2e.conftest import start_kts
from tests.e2e.jvm.spark_connector import connector_jars
from tests.e2e.kafka.conftest import Kts, start_kts_beside, stop_all
from tests.jwt_material import AUDIENCE, ISSUER, JwtKey, jwks, project_token
from tests.kafka.brokers import RunningBroker
from tests.kts_jvm import build_jar

# The first test of each broker runs the whole job (a broker's start, Spark's, two minutes of streaming).
pytestmark = [pytest.mark.kafka, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[3]
JOB = Path(__file__).with_name("spark_kafka_job.py")
RENEW_PERIOD_MS = 8_000  # kts's delegation.token.expiry.time.ms here: a renewal every ~6 s
MAX_LIFETIME_MS = 20_000  # what the provider asks for (kts.max.lifetime.ms): a replacement every ~16 s
OVERLAP_MS = 3_000  # kts.replace.overlap.ms: a replaced token ends 3 s after its successor is handed out
STREAM_TOKENS = 3  # the first token and two replacements read records
BATCH_RECORDS = 10
JOB_DEADLINE_S = 420
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass
class SparkRun:
    """What the job recorded, what kts audited, and the names the test set up."""

    events: list[dict[str, Any]]
    log: str
    creates: list[dict[str, Any]]
    last: set[str]  # the id of each cluster's last token
    later: list[dict[str, Any]]  # the renewals and expiries of the job's tokens
    produced: list[str]
    batch_in: list[str]
    service_account: str
    alice: str
    stream_owner: str  # the job's own identity, or the --proxy-user it runs as
    app_name: str
    secret: TokenSecret

    def phase(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["phase"] == name]


def spark_conf(
    broker: RunningBroker, kts_url: str, jwt_file: Path, alice: str, service_account: str, app_name: str
) -> dict[str, str]:
    """The job's whole Spark configuration: no Kafka password, no sasl.jaas.config. Two clusters on the same
    broker, told apart by the host name in the readers' bootstrap servers: ``stream`` (127.0.0.1, tokens owned
    by the job's own identity) and ``batch`` (localhost, tokens owned by alice through KIP-373)."""
    port = broker.bootstrap.rsplit(":", 1)[1]
    jars = [*connector_jars(), build_jar()]
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.defaultJavaOptions": "-XX:+UseSerialGC",
        "spark.sql.shuffle.partitions": "2",
        "spark.jars": ",".join(str(jar) for jar in jars),
        # Spark 4.3 runs credential providers without Kerberos, over an encrypted RPC channel only.
        "spark.security.directCredentialProviders.enabled": "true",
        "spark.authenticate": "true",
        "spark.network.crypto.enabled": "true",
        "spark.security.credentials.retryWait": "5s",
    }
    clusters = {
        "stream": (f"127\\.0\\.0\\.1:{port}", {}),
        "batch": (f"localhost:{port}", {"kts.owner": f"User:{alice}"}),
    }
    for cluster, (regex, extra) in clusters.items():
        prefix = f"spark.kafka.clusters.{cluster}."
        conf.update(
            {
                f"{prefix}auth.bootstrap.servers": broker.bootstrap,
                f"{prefix}target.bootstrap.servers.regex": regex,
                # PLAINTEXT keeps Spark's own provider (which must stay enabled: it makes the executors rebuild
                # their consumers on a new token) from trying a broker login; the readers say SASL_PLAINTEXT.
                f"{prefix}security.protocol": "PLAINTEXT",
                f"{prefix}sasl.token.mechanism": "SCRAM-SHA-512",
                f"{prefix}kts.url": kts_url,
                f"{prefix}kts.jwt.file": str(jwt_file),
                f"{prefix}kts.max.lifetime.ms": str(MAX_LIFETIME_MS),
                f"{prefix}kts.replace.overlap.ms": str(OVERLAP_MS),
                # Tokens for other owners are renewed by the job's identity, not replaced at each renewal point.
                f"{prefix}kts.renewers": f"User:{service_account}",
                **{prefix + key: value for key, value in extra.items()},
            }
        )
    return conf


def produce(broker: RunningBroker, topic: str, values: list[str]) -> None:
    producer = admin_producer(broker)
    for value in values:
        producer.send(topic, value.encode())
    producer.flush(30)
    producer.close()


def admin_producer(broker: RunningBroker) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        security_protocol=LISTENER,
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=broker.admin.name,
        sasl_plain_password=broker.admin.password,
        linger_ms=0,
    )


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def tokens_that_read(events: list[dict[str, Any]]) -> list[str]:
    """The token ids, in order, with which micro-batches read records."""
    seen: list[str] = []
    for event in events:
        if event["phase"] == "micro-batch" and event["values"] and event["before"] == event["after"]:
            if event["before"] not in seen:
                seen.append(event["before"])
    return seen


@dataclass
class Stack:
    """A broker, kts in front of its tokens (renewing by 8 s where kts sets the period), the key kts trusts for
    workload JWTs."""

    name: str
    broker: RunningBroker
    kts: Kts
    signer: JwtKey


@pytest.fixture(scope="module", params=["zookeeper-3.9", "kraft-4.4"])
def spark_stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """kts on the ZooKeeper-mode broker's chroot (3.9), or on the KRaft broker through the Kafka protocol (4.4)."""
    directory = tmp_path_factory.mktemp(f"kts-spark-{request.param}")
    signer = JwtKey.rsa("cluster-key")
    jwks_file = directory / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(signer)))
    settings = {
        "KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS": str(RENEW_PERIOD_MS),
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
                **settings,
            )
        else:
            broker = request.getfixturevalue("kafka_kraft_broker")
            admin = broker.admin
            name = f"kts-{uuid.uuid4().hex[:6]}"
            url = start_kts(
                processes,
                directory,
                name,
                KTS_BOOTSTRAP_SERVERS=broker.bootstrap,
                KTS_DELEGATION_TOKEN_SECRET_KEY=broker.secret,
                KTS_ADMIN_SECURITY_PROTOCOL=LISTENER,
                KTS_ADMIN_SASL_MECHANISM="SCRAM-SHA-512",
                KTS_ADMIN_SASL_JAAS_CONFIG=broker.kts_jaas,  # kts's own login, never a caller's
                KTS_SUPER_USERS=f"User:{admin.name}",
                KTS_AUTH_FAILURES_MAX="0",
                **settings,
            )
            kts = Kts(url, directory / f"{name}.log")
        yield Stack(request.param, broker, kts, signer)
    finally:
        stop_all(processes)


@pytest.fixture(scope="module")
def spark_run(spark_stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> SparkRun:
    broker, kts, signer = spark_stack.broker, spark_stack.kts, spark_stack.signer
    directory = tmp_path_factory.mktemp(f"spark-job-{spark_stack.name}")
    suffix = uuid.uuid4().hex[:8]
    service_account = f"system:serviceaccount:etl:spark-{suffix}"
    alice = f"alice-{suffix}"
    # On the ZooKeeper-mode broker the job is submitted with --proxy-user: its stream tokens are that user's.
    proxy_user = f"carol-{suffix}" if spark_stack.name.startswith("zookeeper") else None
    stream_owner = f"User:{proxy_user}" if proxy_user else f"User:{service_account}"
    app_name = f"kts-proof-{suffix}"
    batch_in, batch_out, stream_topic = broker.create_topic(), broker.create_topic(), broker.create_topic()

    # The broker authorizes the tokens' owners; kts lets the job's identity create tokens for alice (KIP-373).
    def allow(principal: str, topics: list[str], operations: list[str]) -> None:
        for topic in topics:
            broker.acls(
                "--add", "--allow-principal", principal, *(f"--operation={op}" for op in operations), "--topic", topic
            )
        broker.acls(
            "--add", "--allow-principal", principal, "--operation=Read", "--group", "spark-kafka",
            "--resource-pattern-type", "prefixed",
        )  # fmt: skip

    allow(stream_owner, [stream_topic], ["Read", "Describe"])
    allow(f"User:{alice}", [batch_in, batch_out], ["Read", "Write", "Describe"])
    for owner in {f"User:{alice}", stream_owner} - {f"User:{service_account}"}:
        kts.grant(broker.admin, "User", owner, f"User:{service_account}", "CreateTokens")

    batch_values = [f"batch-{n}" for n in range(BATCH_RECORDS)]
    produce(broker, batch_in, batch_values)

    # The job's only credential: a service-account JWT, where the kubelet projects one.
    (directory / "projected").mkdir()
    jwt_file = project_token(directory / "projected", 1, signer.mint(sub=service_account, lifetime_s=3600))
    events_path = directory / "events.jsonl"
    stop_file = directory / "stop"
    plan = {
        "conf": spark_conf(broker, kts.url, jwt_file, alice, service_account, app_name),
        "events": str(events_path),
        "batch_in": batch_in,
        "batch_out": batch_out,
        "batch_bootstrap": f"localhost:{broker.bootstrap.rsplit(':', 1)[1]}",
        "batch_cluster": "batch",
        "stream": stream_topic,
        "stream_bootstrap": broker.bootstrap,
        "stream_cluster": "stream",
        "client_options": {"kafka.security.protocol": LISTENER},
        "stop_file": str(stop_file),
        "stream_timeout_s": JOB_DEADLINE_S,
        "submit_args": f"--proxy-user {proxy_user} pyspark-shell" if proxy_user else None,
    }
    log_config = directory / "log4j2.properties"
    log_config.write_text(
        "rootLogger.level=WARN\nrootLogger.appenderRef.stderr.ref=STDERR\n"
        "logger.kts.name=kts.jvm\nlogger.kts.level=INFO\n"
        "appender.stderr.type=Console\nappender.stderr.name=STDERR\nappender.stderr.target=SYSTEM_ERR\n"
        "appender.stderr.layout.type=PatternLayout\nappender.stderr.layout.pattern=%d{ISO8601} %p %c{1}: %m%n\n"
    )
    plan["conf"]["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log_config}"
    plan_path = directory / "plan.json"
    plan_path.write_text(json.dumps(plan))
    log_path = directory / "job.log"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "MALLOC_ARENA_MAX": "2",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_USER": "joe",
    }
    job = subprocess.Popen(
        [sys.executable, str(JOB), str(plan_path)],
        cwd=ROOT,
        env=env,
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )

    # Records keep arriving on the stream, two a second, until enough replacements have read some.
    produced: list[str] = []
    stop_producing = threading.Event()

    def keep_producing() -> None:
        producer = admin_producer(broker)
        n = 0
        while not stop_producing.is_set():
            value = f"stream-{n}"
            producer.send(stream_topic, value.encode()).get(30)
            produced.append(value)
            n += 1
            stop_producing.wait(0.5)
        producer.close()

    producer_thread = threading.Thread(target=keep_producing, daemon=True)
    started = time.monotonic()
    try:
        while time.monotonic() - started < JOB_DEADLINE_S and job.poll() is None:
            events = read_events(events_path)
            if any(event["phase"] == "batch" for event in events) and not producer_thread.is_alive():
                producer_thread.start()
            if len(tokens_that_read(events)) >= STREAM_TOKENS:
                break
            time.sleep(1)
        stop_producing.set()
        if producer_thread.is_alive():
            producer_thread.join(30)
        # The last records produced are read before the query stops.
        last = produced[-1] if produced else None
        while last is not None and time.monotonic() - started < JOB_DEADLINE_S and job.poll() is None:
            if any(last in event.get("values", []) for event in read_events(events_path)):
                break
            time.sleep(0.5)
        stop_file.touch()
        job.wait(120)
    finally:
        stop_producing.set()
        if job.poll() is None:
            job.kill()
            job.wait(30)

    def audit(**query: str) -> list[dict[str, Any]]:
        admin = broker.admin
        response = httpx.get(
            f"{kts.url}/v1/audit", params={"limit": "1000", **query}, auth=(admin.name, admin.password), timeout=30
        )
        assert response.status_code == 200, response.text
        return list(response.json()["events"])

    creates = audit(action="token.create", jobFramework="spark", jobName=app_name)
    ids = {event["tokenId"] for event in creates}
    last = {max((e for e in creates if e["owner"] == owner), key=lambda e: e["id"])["tokenId"] for owner in
            {e["owner"] for e in creates}}  # fmt: skip

    def later_events() -> list[dict[str, Any]]:
        return [e for action in ("token.renew", "token.expire") for e in audit(action=action) if e["tokenId"] in ids]

    # The job's JVM ends its last tokens as it shuts down, which may finish after the Python driver has exited.
    deadline = time.monotonic() + 60
    later = later_events()
    while time.monotonic() < deadline and not last <= {e["tokenId"] for e in later if e["action"] == "token.expire"}:
        time.sleep(1)
        later = later_events()
    return SparkRun(
        events=read_events(events_path),
        log=log_path.read_text(errors="replace"),
        creates=creates,
        last=last,
        later=later,
        produced=produced,
        batch_in=batch_values,
        service_account=service_account,
        alice=alice,
        stream_owner=stream_owner,
        app_name=app_name,
        secret=TokenSecret(broker.secret),
    )


def job_failure(run: SparkRun) -> str:
    failed = run.phase("failed")
    return (failed[0]["error"] + "\n" + failed[0]["trace"] if failed else "") + "\n" + run.log[-6000:]


def test_a_batch_job_reads_and_writes_with_a_token_kts_made_for_another_owner(spark_run: SparkRun) -> None:
    (batch,) = spark_run.phase("batch") or [None]
    assert batch is not None, job_failure(spark_run)
    assert batch["read"] == BATCH_RECORDS
    assert batch["values"] == sorted(spark_run.batch_in)
    (create,) = [event for event in spark_run.creates if event["tokenId"] == batch["token"]]
    assert (create["owner"], create["principal"]) == (f"User:{spark_run.alice}", f"User:{spark_run.service_account}")
    print(f"batch job: {BATCH_RECORDS} records read, written and read back in {batch['seconds']} s with one token")


def test_a_streaming_query_reads_across_token_replacements(spark_run: SparkRun) -> None:
    assert spark_run.phase("done"), job_failure(spark_run)
    events = spark_run.events
    readers = tokens_that_read(events)
    assert len(readers) >= STREAM_TOKENS, job_failure(spark_run)
    read = [value for event in spark_run.phase("micro-batch") for value in event["values"]]
    assert sorted(read, key=lambda v: int(v.split("-")[1])) == spark_run.produced  # each exactly once, none lost
    created = {event["tokenId"]: event for event in spark_run.creates}
    stream_tokens = [event for event in spark_run.creates if event["owner"] == spark_run.stream_owner]
    assert all(created[token]["owner"] == spark_run.stream_owner for token in readers)
    # Seconds from a replacement (kts created the token) to the first record read with it.
    delays = []
    for token in readers[1:]:
        issued = created[token]["timestamp"] / 1000
        first = next(e for e in events if e["phase"] == "micro-batch" and e["values"] and e["before"] == token)
        delays.append(round(first["at"] - issued, 2))
    print(
        f"streaming query: {len(read)} records read with {len(readers)} tokens; the job created "
        f"{len(stream_tokens)} stream tokens and {len(spark_run.creates)} in all; seconds from a replacement to "
        f"the first record read with the new token: {delays}"
    )


def test_kts_audit_names_the_job_owner_and_requester(spark_run: SparkRun) -> None:
    assert spark_run.creates, job_failure(spark_run)
    owners = {event["owner"] for event in spark_run.creates}
    assert owners == {spark_run.stream_owner, f"User:{spark_run.alice}"}
    for event in spark_run.creates:
        assert event["outcome"] == "succeeded"
        assert event["principal"] == event["tokenRequester"] == f"User:{spark_run.service_account}"
        assert event["job"]["framework"] == "spark"
        assert event["job"]["name"] == spark_run.app_name
        assert event["job"]["user"] == "joe"
    assert len({event["job"]["id"] for event in spark_run.creates}) == 1  # one job, one id on every token
    renewals = [event for event in spark_run.later if event["action"] == "token.renew"]
    expiries = [event for event in spark_run.later if event["action"] == "token.expire"]
    assert all(event["principal"] == f"User:{spark_run.service_account}" for event in spark_run.later)
    assert expiries  # a replaced token is ended after the overlap, not left to its maximum
    # and the last ones as the application ends, not left to their expiry
    assert spark_run.last <= {event["tokenId"] for event in expiries}, job_failure(spark_run)
    print(f"kts audited {len(spark_run.creates)} creates, {len(renewals)} renewals, {len(expiries)} expiries")


def test_no_kafka_password_or_hmac_in_the_job(spark_run: SparkRun, spark_stack: Stack) -> None:
    (started,) = spark_run.phase("started") or [None]
    assert started is not None, job_failure(spark_run)
    conf = started["conf"]
    assert not [key for key in conf if "jaas" in key or "password" in key or "secret" in key]
    text = json.dumps(conf) + spark_run.log
    assert "kts: Spark's Kafka cluster stream: token" in spark_run.log  # the provider's own lines are in it
    assert spark_stack.broker.admin.password not in text
    for event in spark_run.creates:
        hmac = base64.b64encode(spark_run.secret.hmac(event["tokenId"])).decode()
        assert hmac not in text
