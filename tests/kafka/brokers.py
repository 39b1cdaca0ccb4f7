"""Real Kafka brokers for the tests (README.md beside this file): start one, log in to it, run Kafka's tools.

The process itself is kts's own (``app.cli.server.kafka_broker``, which ``kts dev --kafka`` runs too); this
module adds what tests need around it: a SCRAM super user, readiness by a real SCRAM login, fresh users, the
tools with ``--bootstrap-server`` and ``--command-config``, and the log tail when something goes wrong.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic, ScramMechanism, UserScramCredentialUpsertion

from app.cli.client.kafka_login import BrokerLogin, Credentials, LoginError, login
from app.cli.server.kafka_broker.broker import (
    LISTENER,
    SCRAM_LOGIN_MODULE,
    SCRAM_MECHANISMS,
    BrokerFailed,
    KafkaBroker,
    User,
    client_properties,
    takes_its_own_login,
    write_properties,
    write_tools_logging,
)
from app.cli.server.kafka_broker.release import KRAFT_RELEASE, ZOOKEEPER_MODE_RELEASE, fetch

JAVA_CLIENT = Path(__file__).with_name("TokenClient.java")
ADMIN = User("admin", "admin-kafka-pw")  # a super user on both brokers, with SCRAM-SHA-256 and -512
# kts's own login to the brokers (admin.sasl.jaas.config): a principal of its own, never a caller's
# (app/auth/own_identity.py); a super user on both brokers, with SCRAM-SHA-256 and -512
KTS = User("kts", "kts-kafka-pw")
# Tokens expire within a second of their expiry, not within the hour (the default sweep period).
TEST_PROPERTIES = {"delegation.token.expiry.check.interval.ms": "1000"}
HEAP = "384m"
READY_TIMEOUT_S = 180.0  # a loaded 2-core machine; a broker usually starts in 5-10 s


class RunningBroker:
    """A started broker and what a test needs to use it.

    - ``bootstrap``: ``127.0.0.1:<port>``, one ``SASL_PLAINTEXT`` listener (PLAIN, SCRAM-SHA-256/512);
    - ``secret``: its ``delegation.token.secret.key`` (give kts the same one);
    - ``admin``: a super user's name and password (SCRAM); ``new_user()`` makes more;
    - ``kts``: the login kts itself uses toward the broker (``kts_jaas``: as admin.sasl.jaas.config), a super user
      of the broker that no HTTP caller may be;
    - ``zookeeper_connect``: ZooKeeper mode only, the connect string with the broker's chroot (give kts the same);
    - ``classpath``, ``version``: the release's jars, for a Java program compiled in a test;
    - ``tool(...)``, ``acls(...)``, ``configs(...)``, ``tokens(...)``: Kafka's own tools against this broker;
    - ``java_token_client(...)``: a Java client logging in with a token, producing and consuming a record.
    """

    def __init__(self, broker: KafkaBroker, admin: User = ADMIN, kts: User = KTS) -> None:
        self.broker = broker
        self.admin = admin
        self.kts = kts
        self._configs = 0

    @property
    def kts_jaas(self) -> str:
        """kts's ``admin.sasl.jaas.config`` (SCRAM-SHA-512) for this broker."""
        return f'{SCRAM_LOGIN_MODULE} required username="{self.kts.name}" password="{self.kts.password}";'

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    @property
    def secret(self) -> str:
        return self.broker.secret

    @property
    def zookeeper_connect(self) -> str | None:
        return self.broker.zookeeper_connect

    @property
    def version(self) -> str:
        return self.broker.release.version

    @property
    def classpath(self) -> str:
        return self.broker.release.classpath

    @property
    def directory(self) -> Path:
        return self.broker.directory

    @property
    def log_path(self) -> Path:
        return self.broker.log_path

    def log_tail(self, lines: int = 40) -> str:
        return self.broker.log_tail(lines)

    def log_text(self) -> str:
        return self.broker.log_path.read_text(errors="replace")

    def check_alive(self) -> None:
        if not self.broker.alive():
            raise BrokerFailed(f"the Kafka {self.version} broker has died; the end of its log:\n{self.log_tail()}")

    # logging in

    def login(self, credentials: Credentials, mechanism: str = "SCRAM-SHA-512", *, timeout_s: float = 10.0) -> None:
        """One login as a Kafka client would, with kts's Python client; LoginError with the broker's answer."""
        self.check_alive()
        login(BrokerLogin((self.bootstrap,), LISTENER, mechanism), credentials, timeout_s=timeout_s)

    def login_error(self, credentials: Credentials, mechanism: str = "SCRAM-SHA-512") -> str:
        """The broker's answer to a login that must fail."""
        try:
            self.login(credentials, mechanism)
        except LoginError as exc:
            assert exc.refused, exc
            return str(exc)
        raise AssertionError(f"the broker accepted {credentials.username} with {mechanism}")

    def wait_for_login(
        self, credentials: Credentials, mechanisms: tuple[str, ...] = SCRAM_MECHANISMS, timeout_s: float = 60.0
    ) -> float:
        """Retry until every mechanism logs in (the broker learns users and tokens from ZooKeeper or the
        metadata log a moment after they are written); the seconds it took."""
        started = time.monotonic()
        for mechanism in mechanisms:
            while True:
                try:
                    self.login(credentials, mechanism)
                    break
                except LoginError as exc:
                    if time.monotonic() - started > timeout_s:
                        raise AssertionError(f"no login within {timeout_s} s: {exc}") from exc
                    time.sleep(0.05)
        return time.monotonic() - started

    def admin_client(self, user: User | None = None, mechanism: str = "SCRAM-SHA-512") -> KafkaAdminClient:
        """kafka-python's admin client as ``user`` (default: the super user); close it after use."""
        user = user or self.admin
        return KafkaAdminClient(
            bootstrap_servers=self.bootstrap,
            security_protocol=LISTENER,
            sasl_mechanism=mechanism,
            sasl_plain_username=user.name,
            sasl_plain_password=user.password,
            request_timeout_ms=30000,
        )

    def new_user(self, prefix: str = "user") -> User:
        """A SCRAM user of its own (both mechanisms), made by the broker (AlterUserScramCredentials as the super
        user, which a ZooKeeper-mode broker writes to ``/config/users``), once it can log in."""
        user = User(f"{prefix}-{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(12))
        _put_scram_user(self.admin_client(), user)
        self.wait_for_login(Credentials(user.name, user.password))
        return user

    def create_topic(self, name: str | None = None) -> str:
        """A topic with one partition, created as the super user; its name."""
        name = name or f"topic-{uuid.uuid4().hex[:8]}"
        admin = self.admin_client()
        try:
            admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
        finally:
            admin.close()
        return name

    # Kafka's tools

    def command_config(
        self, user: User | None = None, mechanism: str = "SCRAM-SHA-512", *, token: bool = False
    ) -> Path:
        """A ``--command-config`` file logging in as ``user`` (default: the super user); ``token``: ``user`` is a
        delegation token's id and HMAC, logged in with ``tokenauth="true"``."""
        self._configs += 1
        path = self.directory / f"client-{self._configs}.properties"
        return write_properties(path, client_properties(user or self.admin, mechanism, token=token))

    def tool(
        self,
        tool: str,
        *arguments: str,
        user: User | None = None,
        mechanism: str = "SCRAM-SHA-512",
        token: bool = False,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run a tool of the broker's release (``AclCommand``, ``ConfigCommand``, ``DelegationTokenCommand``, ...;
        the class for this release is picked) with ``--bootstrap-server`` and ``--command-config`` logging in as
        ``user``. ``check``: fail with the tool's output when it exits non-zero."""
        self.check_alive()
        config = self.command_config(user, mechanism, token=token)
        return self.broker.run_tool(
            tool, "--bootstrap-server", self.bootstrap, "--command-config", str(config), *arguments, check=check
        )

    def acls(self, *arguments: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """kafka-acls.sh."""
        return self.tool("AclCommand", *arguments, **options)

    def configs(self, *arguments: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """kafka-configs.sh."""
        return self.tool("ConfigCommand", *arguments, **options)

    def tokens(self, *arguments: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """kafka-delegation-tokens.sh."""
        return self.tool("DelegationTokenCommand", *arguments, **options)

    # a Java workload

    def java_token_client(
        self, token_id: str, hmac: str, topic: str, mechanism: str = "SCRAM-SHA-512"
    ) -> subprocess.CompletedProcess[str]:
        """Run TokenClient.java (compiled against this release on first use): log in with the token, produce a
        record to ``topic`` and read it back. Exit 0 with "produced ..." and "consumed ..." lines, or 1 with
        "refused: <what Kafka raised>"."""
        self.check_alive()
        return java_token_client(
            self.broker.release.classpath, self.directory, self.bootstrap, token_id, hmac, topic, mechanism
        )


def java_token_client(
    classpath: str, directory: Path, bootstrap: str, token_id: str, hmac: str, topic: str, mechanism: str
) -> subprocess.CompletedProcess[str]:
    """TokenClient.java, compiled against ``classpath`` (a release's jars) into ``directory`` on first use, logging
    in to ``bootstrap`` with the token (RunningBroker.java_token_client: what it prints, how it exits)."""
    classes = directory / "java-client"
    if not (classes / "TokenClient.class").exists():
        subprocess.run(
            ["javac", "-cp", classpath, "-d", str(classes), str(JAVA_CLIENT)],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            *write_tools_logging(directory),
            "-cp",
            f"{classpath}:{classes}",
            "TokenClient",
            bootstrap,
            mechanism,
            topic,
        ],
        env={**os.environ, "KAFKA_TOKEN_ID": token_id, "KAFKA_TOKEN_HMAC": hmac},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _put_scram_user(admin: KafkaAdminClient, user: User) -> None:
    """Both SCRAM credentials of ``user``, one request each (KRaft refuses two for one user in a request)."""
    try:
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            failed = admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion(user.name, mechanism, user.password)]
            )
            if failed != {user.name: None}:
                raise BrokerFailed(f"the broker did not store {user.name}'s {mechanism.name} credentials: {failed}")
    finally:
        admin.close()


def _scram_login_succeeds(user: User) -> Callable[[KafkaBroker], bool]:
    def ready(broker: KafkaBroker) -> bool:
        for mechanism in SCRAM_MECHANISMS:
            login(BrokerLogin((broker.bootstrap,), LISTENER, mechanism), Credentials(user.name, user.password))
        return True

    return ready


def start_zookeeper_mode_broker(
    directory: Path,
    zookeeper_connect: str,
    secret: str,
    *,
    extra_properties: dict[str, str] | None = None,
    version: str = ZOOKEEPER_MODE_RELEASE,
) -> RunningBroker:
    """A 3.x broker (3.9 unless ``version`` says otherwise) on ``zookeeper_connect`` (with its chroot), ready when
    ``ADMIN`` and ``KTS`` log in with SCRAM.

    The super users' SCRAM credentials are made by the broker itself (AlterUserScramCredentials over its PLAIN
    login), then both SCRAM mechanisms must log in."""
    broker = KafkaBroker(
        fetch(version),
        directory,
        secret=secret,
        zookeeper_connect=zookeeper_connect,
        super_users=[ADMIN.principal, KTS.principal],
        heap=HEAP,
        extra_properties=TEST_PROPERTIES | (extra_properties or {}),
    )
    broker.start(takes_its_own_login, timeout_s=READY_TIMEOUT_S)
    try:
        bootstrap = RunningBroker(broker, User(broker.broker_user.name, broker.broker_user.password))
        for user in (ADMIN, KTS):
            _put_scram_user(bootstrap.admin_client(mechanism="PLAIN"), user)
            _wait(broker, _scram_login_succeeds(user))
    except BaseException:
        broker.stop()
        raise
    return RunningBroker(broker)


def start_kraft_broker(
    directory: Path,
    secret: str,
    *,
    extra_properties: dict[str, str] | None = None,
    kts_super_user: bool = True,
    version: str = KRAFT_RELEASE,
) -> RunningBroker:
    """A 4.x (the newest unless ``version`` says otherwise) combined broker and controller, its storage formatted
    with ``ADMIN``'s and ``KTS``'s SCRAM credentials (``--add-scram``), ready when ``ADMIN`` logs in with SCRAM.
    ``kts_super_user=False``: only ``ADMIN`` is formatted in and a super user (``KTS`` gets its password and grants
    as an operator gives them)."""
    broker = KafkaBroker(
        fetch(version),
        directory,
        secret=secret,
        super_users=[ADMIN.principal, KTS.principal] if kts_super_user else [ADMIN.principal],
        scram_users=[ADMIN, KTS] if kts_super_user else [ADMIN],
        heap=HEAP,
        extra_properties=TEST_PROPERTIES | (extra_properties or {}),
    )
    broker.start(_scram_login_succeeds(ADMIN), timeout_s=READY_TIMEOUT_S)
    return RunningBroker(broker)


def _wait(broker: KafkaBroker, ready: Callable[[KafkaBroker], bool]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            if ready(broker):
                return
        except LoginError as exc:
            if time.monotonic() > deadline or not broker.alive():
                raise BrokerFailed(f"{exc}; the end of {broker.log_path}:\n{broker.log_tail()}") from exc
        time.sleep(0.1)
