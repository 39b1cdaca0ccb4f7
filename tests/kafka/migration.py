"""Kafka 3.9's ZooKeeper to KRaft migration, run for real (Kafka's documentation, "ZooKeeper to KRaft Migration"):
brokers (two by default) that start in ZooKeeper mode, a KRaft controller started with
``zookeeper.metadata.migration.enable``, the brokers restarted into migration mode (the controller claims the cluster
when the last one is up), then restarted one at a time as KRaft brokers, and the controller finally restarted out of
migration mode. Between the first broker's restart as a KRaft broker and the last one's, the cluster runs both
ways at once: the dual-write phase in which brokers still in ZooKeeper mode learn tokens from ZooKeeper alone.

The processes are ``KafkaBroker``s of the 3.9 release (app/cli/server/kafka_broker/broker.py) with the properties
of each role; they share one PLAIN identity (``User:broker``) for the SASL listener, which the controller also
uses to reach the broker while it is still in ZooKeeper mode. The controller listener is PLAINTEXT on loopback,
so the broker reaches the controller as ``User:ANONYMOUS``, a super user there.

The controller logs its migration at INFO (``org.apache.kafka.metadata.migration``): the log says what it copied.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from kazoo.client import KazooClient

from app.cli.client.kafka_login import BrokerLogin, Credentials, LoginError, login
from app.cli.server.embedded_zookeeper import free_port
from app.cli.server.kafka_broker.broker import _LOG4J, KRAFT_AUTHORIZER, LISTENER, KafkaBroker, User
from app.cli.server.kafka_broker.release import ZOOKEEPER_MODE_RELEASE, fetch
from tests.kafka.brokers import ADMIN, HEAP, KTS, READY_TIMEOUT_S, TEST_PROPERTIES, RunningBroker

CONTROLLER_ID = 3000  # as in Kafka's documentation: KRaft node ids must differ from every broker.id
BROKERS = 2  # broker.id 0 and 1
MIGRATION_LOG4J = (
    _LOG4J
    + "log4j.logger.org.apache.kafka.metadata.migration=INFO\n"
    + "log4j.logger.kafka.server.KafkaRaftServer=INFO\n"
    + "log4j.logger.kafka.zk.KafkaZkClient=INFO\n"
)
SERVER_STARTED = "Kafka Server started"  # KafkaRaftServer's line once a KRaft node serves
COMPLETED = re.compile(r"Completed migration of metadata from Zoo[Kk]eeper to KRaft[^\n]*")


class MigrationNode(KafkaBroker):
    """A 3.9 process whose server.properties are those of its current role (``role``), restarted between roles."""

    def __init__(self, directory: Path, *, secret: str, zookeeper_connect: str, broker_user: User, port: int) -> None:
        # zookeeper_connect satisfies KafkaBroker's check (a 3.x release runs in ZooKeeper mode there) and gives
        # the base properties theirs; each role then says what the process reads.
        super().__init__(
            fetch(ZOOKEEPER_MODE_RELEASE),
            directory,
            secret=secret,
            zookeeper_connect=zookeeper_connect,
            super_users=[ADMIN.principal, KTS.principal],
            port=port,
            heap=HEAP,
        )
        self.broker_user = broker_user  # one identity for every node: the controller logs in to the broker with it
        self.role: dict[str, str] = {}

    def base_properties(self) -> dict[str, str]:
        """The fixtures' ZooKeeper-mode broker: its SASL listener, logins, secret and test settings."""
        return super().properties() | TEST_PROPERTIES

    def properties(self) -> dict[str, str]:
        return self.role

    def _java(self, main_class: str, *arguments: str, server: bool = False) -> list[str]:
        command = super()._java(main_class, *arguments, server=server)
        if not server:
            return command
        (self.directory / "migration-log4j.properties").write_text(MIGRATION_LOG4J)
        config = f"-Dlog4j.configuration=file:{self.directory / 'migration-log4j.properties'}"
        return [config if part.startswith("-Dlog4j.configuration=") else part for part in command]


class Migration:
    """The cluster of the migration, one role at a time: ``start_zookeeper_brokers``, ``start_controller``,
    ``restart_brokers_into_migration``, ``restart_broker_as_kraft`` (one broker at a time); ``stop`` ends whatever
    runs. Broker ``i`` has ``broker.id`` (then ``node.id``) ``i``."""

    def __init__(self, directory: Path, zookeeper_connect: str, secret: str, *, brokers: int = BROKERS) -> None:
        self.zookeeper_connect = zookeeper_connect
        broker_user = User("broker", secrets.token_urlsafe(18))
        self.brokers = [
            MigrationNode(
                directory / f"broker-{index}",
                secret=secret,
                zookeeper_connect=zookeeper_connect,
                broker_user=broker_user,
                port=free_port(),
            )
            for index in range(brokers)
        ]
        self.broker = self.brokers[0]
        self.controller = MigrationNode(
            directory / "controller",
            secret=secret,
            zookeeper_connect=zookeeper_connect,
            broker_user=broker_user,
            port=free_port(),
        )

    @property
    def bootstrap(self) -> str:
        """Every broker, as clients list them: one restarting leaves the others to answer."""
        return ",".join(broker.bootstrap for broker in self.brokers)

    @property
    def quorum(self) -> str:
        return f"{CONTROLLER_ID}@127.0.0.1:{self.controller.port}"

    def running_broker(self, index: int = 0) -> RunningBroker:
        """A broker as the fixtures offer it (logins, Kafka's tools), whatever its current role."""
        return RunningBroker(self.brokers[index])

    # the roles

    def zookeeper_broker_properties(self, index: int = 0) -> dict[str, str]:
        """A ZooKeeper-mode broker ready to be migrated: ``inter.broker.protocol.version`` at 3.9."""
        node = self.brokers[index]
        return node.base_properties() | {"broker.id": str(index), "inter.broker.protocol.version": "3.9"}

    def migrating_broker_properties(self, index: int = 0) -> dict[str, str]:
        return self.zookeeper_broker_properties(index) | {
            "zookeeper.metadata.migration.enable": "true",
            "controller.quorum.voters": self.quorum,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": f"{LISTENER}:{LISTENER},CONTROLLER:PLAINTEXT",
        }

    def kraft_broker_properties(self, index: int = 0) -> dict[str, str]:
        """The same broker in KRaft: ``node.id`` for ``broker.id``, no ZooKeeper, no IBP, StandardAuthorizer."""
        values = {
            key: value
            for key, value in self.brokers[index].base_properties().items()
            if not key.startswith("zookeeper.") and key not in ("broker.id", "inter.broker.protocol.version")
        }
        return values | {
            "process.roles": "broker",
            "node.id": str(index),
            "controller.quorum.voters": self.quorum,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": f"{LISTENER}:{LISTENER},CONTROLLER:PLAINTEXT",
            "authorizer.class.name": KRAFT_AUTHORIZER,
        }

    def controller_properties(self) -> dict[str, str]:
        """A KRaft controller provisioned for the migration, as Kafka's documentation configures it, plus the
        brokers' secret key and super users, and the SASL identity it reaches ZooKeeper-mode brokers with."""
        values = {
            key: value
            for key, value in self.controller.base_properties().items()
            if key not in ("broker.id", "listeners", "advertised.listeners", "authorizer.class.name")
        }
        broker_user = self.controller.broker_user
        return values | {
            "process.roles": "controller",
            "node.id": str(CONTROLLER_ID),
            "controller.quorum.voters": self.quorum,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"CONTROLLER://127.0.0.1:{self.controller.port}",
            "listener.security.protocol.map": f"{LISTENER}:{LISTENER},CONTROLLER:PLAINTEXT",
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": self.zookeeper_connect,
            "authorizer.class.name": KRAFT_AUTHORIZER,
            "super.users": ";".join((broker_user.principal, ADMIN.principal, KTS.principal, "User:ANONYMOUS")),
        }

    # starting and stopping

    def start_zookeeper_brokers(self) -> None:
        for index in range(len(self.brokers)):
            self._start_broker(index, self.zookeeper_broker_properties(index))

    def restart_brokers_into_migration(self) -> None:
        """Each broker in turn, as a rolling restart does; the controller claims the cluster after the last."""
        for index in range(len(self.brokers)):
            self.brokers[index].stop(timeout_s=60)
            self._start_broker(index, self.migrating_broker_properties(index))

    def restart_broker_as_kraft(self, index: int) -> None:
        self.brokers[index].stop(timeout_s=60)
        self._start_broker(index, self.kraft_broker_properties(index))

    def start_controller(self, cluster_id: str) -> None:
        """Format the controller's storage with the ZooKeeper cluster's id, then start it; it is up once it has
        created ``/migration``."""
        node = self.controller
        node.role = self.controller_properties()
        node.directory.mkdir(parents=True, exist_ok=True)
        config = node.directory / "format.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in node.role.items()))
        node.run_tool("StorageTool", "format", "-t", cluster_id, "-c", str(config))
        node.start(lambda _: _has_migration_znode(self.zookeeper_connect), timeout_s=READY_TIMEOUT_S)

    def finalize(self) -> None:
        """Take the controller out of migration mode (Kafka's "Finalizing the migration"): restarted without
        ``zookeeper.metadata.migration.enable`` and ZooKeeper; ZooKeeper is no longer written."""
        node = self.controller
        node.stop(timeout_s=60)
        started = self.controller_log().count(SERVER_STARTED)
        node.role = {
            key: value
            for key, value in self.controller_properties().items()
            if key not in ("zookeeper.metadata.migration.enable", "zookeeper.connect")
            and not key.startswith("zookeeper.")
        }
        node.start(lambda _: self.controller_log().count(SERVER_STARTED) > started, timeout_s=READY_TIMEOUT_S)

    def _start_broker(self, index: int, properties: dict[str, str]) -> None:
        node = self.brokers[index]
        node.role = properties
        node.start(self._plain_login_succeeds, timeout_s=READY_TIMEOUT_S)

    def _plain_login_succeeds(self, node: KafkaBroker) -> bool:
        login(
            BrokerLogin((node.bootstrap,), LISTENER, "PLAIN"),
            Credentials(node.broker_user.name, node.broker_user.password),
        )
        return True

    def stop(self) -> None:
        for node in (*self.brokers, self.controller):
            node.stop(timeout_s=60)

    def controller_log(self) -> str:
        try:
            return self.controller.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def completed_line(self) -> str | None:
        """The controller's line that says the metadata was copied, and what it generated."""
        found = COMPLETED.search(self.controller_log())
        return None if found is None else found.group(0)


def _has_migration_znode(zookeeper_connect: str) -> bool:
    client = KazooClient(hosts=zookeeper_connect)
    client.start(10)
    try:
        return client.exists("/migration") is not None
    finally:
        client.stop()
        client.close()


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = READY_TIMEOUT_S) -> float:
    """Poll until ``check()`` holds (a loaded machine may take minutes to move a broker); the seconds it took."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - started


def login_succeeds(broker: RunningBroker, credentials: Credentials, mechanism: str = "SCRAM-SHA-512") -> bool:
    try:
        broker.login(credentials, mechanism)
    except LoginError as exc:
        if not exc.refused:
            raise
        return False
    return True
