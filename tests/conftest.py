"""Fixtures shared by every test: a real ZooKeeper server (one per session, a fresh chroot per test), real
PostgreSQL, and real Kafka brokers (tests/kafka/README.md)."""

from __future__ import annotations

import importlib
import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.cli.server.kafka_broker.broker import BrokerFailed
from app.cli.server.kafka_broker.release import KRAFT_RELEASE, RELEASES, ZOOKEEPER_MODE_RELEASE, KafkaUnavailable
from tests.kafka.brokers import RunningBroker, start_kraft_broker, start_zookeeper_mode_broker
from tests.kts_jvm import JarBuildFailed, build_jar
from tests.postgres_server import PostgresServer

SECRET = "test12345"


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings must come from the test, never from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("KTS_"):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _kafka_pythons_sasl_mechanisms_as_shipped() -> Iterator[None]:
    """kafka-python looks every login's mechanism up by name in one registry per process
    (``register_sasl_mechanism``): a test that leaves a mechanism of its own there (a token mechanism under
    SCRAM-SHA-512) turns the logins of every later test in the session into something else, kts's own and the
    broker fixtures' included. Such a test fails here, naming what it left, and kafka-python's own classes go back."""
    yield
    registry = sys.modules.get("kafka.net.sasl")
    if registry is None:
        return
    foreign = {
        name: f"{cls.__module__}.{cls.__qualname__}"
        for name, cls in registry.SASL_MECHANISMS.items()
        if not cls.__module__.startswith("kafka.net.sasl.")
    }
    if foreign:
        importlib.reload(registry)  # registers kafka-python's own classes again, as at import
        pytest.fail(f"this test left kafka-python's SASL mechanisms replaced (process-wide): {foreign}")


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    server = EmbeddedZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


# What a Kafka broker writes to /cluster/id the first time it starts (ZkData.scala's ClusterIdZNode): kts refuses
# a zookeeper.connect without it (zookeeper.cluster.required).
CLUSTER_ID = "kts-test-cluster-id-0w"


def seed_kafka_cluster(hosts: str, chroot: str, cluster_id: str = CLUSTER_ID) -> None:
    """Make ``chroot`` look like the home of a Kafka cluster, as its first broker leaves it: ``/cluster/id``."""
    client = KazooClient(hosts=hosts)
    client.start(10)
    try:
        client.create(f"{chroot}/cluster/id", b'{"version":"1","id":"%s"}' % cluster_id.encode(), makepath=True)
    finally:
        client.stop()
        client.close()


@pytest.fixture
def zk_connect(zookeeper: EmbeddedZooKeeper) -> str:
    """A connect string with a chroot of its own, so every test starts from empty ZooKeeper state, apart from
    the ``/cluster/id`` a broker would have written (seed_kafka_cluster)."""
    chroot = f"/kts-test-{uuid.uuid4().hex[:12]}"
    seed_kafka_cluster(zookeeper.connect_string, chroot)
    return f"{zookeeper.connect_string}{chroot}"


@pytest.fixture
def raw_zk(zk_connect: str) -> Iterator[KazooClient]:
    """A plain kazoo client on the test's chroot, to put and inspect znodes as a broker would."""
    hosts, _, chroot = zk_connect.partition("/")
    bootstrap = KazooClient(hosts=hosts)
    bootstrap.start(10)
    bootstrap.ensure_path("/" + chroot)
    bootstrap.stop()
    bootstrap.close()
    client = KazooClient(hosts=zk_connect)
    client.start(10)
    yield client
    client.stop()
    client.close()


# ZooKeeper with SASL DIGEST-MD5 logins, as secured Kafka clusters run it: "kts" is the identity kts (and
# the brokers) log in as, "other" an authenticated stranger.
ZK_SASL_USERS = {"kts": "kts-zk-password", "other": "other-zk-password"}


@dataclass(frozen=True)
class SaslZooKeeper:
    server: EmbeddedZooKeeper
    enforced: bool  # enforce.auth.enabled: anonymous clients are refused outright

    def chroot_connect(self) -> str:
        return f"{self.server.connect_string}/kts-test-{uuid.uuid4().hex[:12]}"

    def client(
        self, user: str | None = "kts", *, password: str | None = None, connect: str | None = None
    ) -> KazooClient:
        """A started kazoo client logged in as ``user`` (None: anonymous)."""
        sasl = None
        if user is not None:
            sasl = {"mechanism": "DIGEST-MD5", "username": user, "password": password or ZK_SASL_USERS[user]}
        client = KazooClient(hosts=connect or self.server.connect_string, sasl_options=sasl)
        client.start(10)
        return client


def start_sasl_zookeeper(directory: Path, *, enforced: bool) -> SaslZooKeeper:
    jaas = directory / "zookeeper-server.jaas"
    users = "".join(f'\n    user_{name}="{password}"' for name, password in ZK_SASL_USERS.items())
    jaas.write_text(f"Server {{\n    org.apache.zookeeper.server.auth.DigestLoginModule required{users};\n}};\n")
    config = ["authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"]
    if enforced:
        config += ["enforce.auth.enabled=true", "enforce.auth.schemes=sasl"]
    server = EmbeddedZooKeeper(
        directory, extra_config=tuple(config), jvm_options=(f"-Djava.security.auth.login.config={jaas}",)
    )
    server.start()
    return SaslZooKeeper(server, enforced)


@pytest.fixture(scope="session")
def sasl_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslZooKeeper]:
    """A ZooKeeper that enforces SASL DIGEST-MD5 authentication (ZooKeeper 3.8 ``enforce.auth.enabled``)."""
    zookeeper = start_sasl_zookeeper(tmp_path_factory.mktemp("zookeeper-sasl"), enforced=True)
    yield zookeeper
    zookeeper.server.stop()


@pytest.fixture(scope="session")
def sasl_optional_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslZooKeeper]:
    """A ZooKeeper that accepts SASL logins but also anonymous clients, which only znode ACLs then hold back
    (how most secured Kafka ensembles run: enforcement is new in ZooKeeper 3.8)."""
    zookeeper = start_sasl_zookeeper(tmp_path_factory.mktemp("zookeeper-sasl-optional"), enforced=False)
    yield zookeeper
    zookeeper.server.stop()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    server = PostgresServer(tmp_path_factory.mktemp("postgres"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_audit_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty audit database URL, once for SQLite and once for a real PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'audit.db'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


def write_properties(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8")
    return path


# Real Kafka brokers, one of each per session (tests/kafka/README.md). They share state across the tests that
# use them: give users, topics and tokens names of your own (RunningBroker.new_user, create_topic).
KAFKA_FIXTURES = ("kafka_zk_broker", "kafka_kraft_broker")
# The release matrix (make test-kafka-matrix, tests/kafka/matrix.py): ``--kafka-release=V`` starts release V in
# place of the newest of its mode and leaves out the tests on the other mode's broker; ``--kafka-matrix-results``
# names a file where each ``kafka_matrix`` test's outcome is appended as a JSON line.
MATRIX_MARKER = "kafka_matrix"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka", "real Kafka brokers")
    group.addoption(
        "--kafka-release",
        choices=RELEASES,
        default=None,
        help="run the broker tests on this release (its mode's fixture only); default: the newest of each mode",
    )
    group.addoption("--kafka-matrix-results", default=None, help="append each kafka_matrix test's outcome (JSON lines)")


def kafka_release(config: pytest.Config, zookeeper_mode: bool) -> str:
    """The release a broker fixture starts: ``--kafka-release`` when it is of that mode, else the newest."""
    chosen = config.getoption("--kafka-release")
    if chosen is not None and _zookeeper_mode(chosen) == zookeeper_mode:
        return str(chosen)
    return ZOOKEEPER_MODE_RELEASE if zookeeper_mode else KRAFT_RELEASE


def _zookeeper_mode(version: str) -> bool:
    return int(version.split(".", 1)[0]) < 4


def broker_mode(item: pytest.Item) -> str | None:
    """Which broker a test runs on: ``zk`` (ZooKeeper mode), ``kraft``, or None (no broker)."""
    names = set(getattr(item, "fixturenames", ()))
    # brokers chosen by a parameter (a string); other tests' parameters may be anything, unhashable included
    values = getattr(getattr(item, "callspec", None), "params", {}).values()
    params = {value for value in values if isinstance(value, str)}
    if "kafka_zk_broker" in names or params & {"zk-broker", "kafka_zk_broker"}:
        return "zk"
    if "kafka_kraft_broker" in names or params & {"kraft", "kafka_kraft_broker"}:
        return "kraft"
    return None


def kts_on(item: pytest.Item) -> str:
    """How kts reaches the cluster in a matrix test: the broker's ZooKeeper, or the Kafka protocol."""
    names = set(getattr(item, "fixturenames", ()))
    return "zookeeper.connect" if "kafka_zk_broker" in names else "bootstrap.servers"


def _started(start: Callable[[], RunningBroker]) -> RunningBroker:
    """A broker that cannot be had fails every test that needs it with one line, never a skip."""
    try:
        return start()
    except (KafkaUnavailable, BrokerFailed) as exc:
        pytest.fail(f"no Kafka broker: {exc}", pytrace=False)


def _stopped(broker: RunningBroker) -> None:
    died = not broker.broker.alive()
    broker.broker.stop()
    if died:
        pytest.fail(f"the Kafka {broker.version} broker died during the session:\n{broker.log_tail()}", pytrace=False)


@pytest.fixture(scope="session")
def kafka_zk_broker(
    request: pytest.FixtureRequest, zookeeper: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningBroker]:
    """Kafka 3.9 (or ``--kafka-release``) in ZooKeeper mode on the tests' ZooKeeper, under a chroot of its own: kts
    started with ``zookeeper_connect=broker.zookeeper_connect`` and ``delegation_token_secret_key=broker.secret``
    is its token authority."""
    directory = tmp_path_factory.mktemp("kafka-zk")
    connect = f"{zookeeper.connect_string}/kafka-{uuid.uuid4().hex[:12]}"
    version = kafka_release(request.config, zookeeper_mode=True)
    broker = _started(lambda: start_zookeeper_mode_broker(directory, connect, SECRET, version=version))
    yield broker
    _stopped(broker)


@pytest.fixture(scope="session")
def kafka_kraft_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningBroker]:
    """Kafka 4.x (the newest, or ``--kafka-release``) in KRaft mode: one combined broker and controller, its storage
    formatted with the super user."""
    directory = tmp_path_factory.mktemp("kafka-kraft")
    version = kafka_release(request.config, zookeeper_mode=False)
    broker = _started(lambda: start_kraft_broker(directory, SECRET, version=version))
    yield broker
    _stopped(broker)


@pytest.fixture(scope="session")
def kts_jvm_jar() -> Path:
    """``build/kts-jvm.jar`` (the JVM library jobs load), rebuilt by ``make jars`` when jvm/ changed."""
    try:
        return build_jar()
    except JarBuildFailed as exc:
        pytest.fail(f"no kts-jvm.jar: {exc}", pytrace=False)


# A broker starts in 5-25 s, and its tools take seconds each, on a loaded 2-core machine: a test on one gets more
# time than the suite's default (the first test to ask for a broker waits for its start).
KAFKA_TEST_TIMEOUT_S = 360


# make check's fast tier (marker ``check``): the unit tests and the API tests, on no real broker, no PostgreSQL,
# no Spark and no browser (they stay in make test); ZooKeeper, SQLite and the in-memory backend are in.
CHECK_TIER = ("tests/unit/", "tests/api/")
NOT_IN_CHECK = {"postgres", "spark", "kts_jvm_jar", "kafka_zk_broker", "kafka_kraft_broker"}


def in_check_tier(item: pytest.Item) -> bool:
    if not item.nodeid.startswith(CHECK_TIER) or item.get_closest_marker("kafka") or item.get_closest_marker("browser"):
        return False
    values = getattr(getattr(item, "callspec", None), "params", {}).values()
    on_postgres = any(isinstance(value, str) and value == "postgresql" for value in values)  # any_audit_db's
    return not on_postgres and not NOT_IN_CHECK & set(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests on a real broker carry the ``kafka`` marker (``-m kafka`` runs them, ``-m "not kafka"`` the rest), and
    the fast tier's tests the ``check`` marker (``-m check``, make check).
    With ``--kafka-release``, only the tests on that release's mode run (the other mode's broker never starts)."""
    chosen = config.getoption("--kafka-release")
    if chosen is not None:
        wanted = "zk" if _zookeeper_mode(chosen) else "kraft"
        kept = [item for item in items if broker_mode(item) == wanted]
        config.hook.pytest_deselected(items=[item for item in items if broker_mode(item) != wanted])
        items[:] = kept
    for item in items:
        on_broker = broker_mode(item) is not None
        if on_broker or item.get_closest_marker("kafka"):
            item.add_marker(pytest.mark.kafka)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(KAFKA_TEST_TIMEOUT_S))
        if in_check_tier(item):
            item.add_marker(pytest.mark.check)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With ``--kafka-matrix-results``: each matrix test's outcome (its failure, whichever phase it failed in)."""
    record = getattr(report, "kafka_matrix", None)
    if record is None or not (report.when == "call" or report.failed):
        return
    outcome = "skipped" if report.skipped else report.outcome
    with Path(record.pop("file")).open("a", encoding="utf-8") as results:
        results.write(json.dumps({**record, "outcome": outcome, "when": report.when}) + "\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test on a broker shows the end of the broker's log."""
    report = yield
    results = item.config.getoption("--kafka-matrix-results")
    marker = item.get_closest_marker(MATRIX_MARKER)
    if results and marker is not None:
        report.kafka_matrix = {  # type: ignore[attr-defined]
            "file": results,
            "test": item.nodeid,
            "proofs": list(marker.args),
            "kts_on": kts_on(item),
            "mode": broker_mode(item),
        }
    if report.failed:
        funcargs = getattr(item, "funcargs", {})
        for name in KAFKA_FIXTURES:
            broker = funcargs.get(name)
            if isinstance(broker, RunningBroker):
                report.sections.append((f"{name}: the end of {broker.log_path}", broker.log_tail(60)))
    return report
