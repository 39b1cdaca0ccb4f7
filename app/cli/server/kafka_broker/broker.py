"""One real Apache Kafka broker on loopback, run from a release's jars (``release.py``).

Two shapes, both with one ``SASL_PLAINTEXT`` listener offering PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512:

- ZooKeeper mode (3.x): ``zookeeper.connect`` names the ZooKeeper (and chroot) kts uses, so the broker reads
  the tokens, ACLs and SCRAM users kts writes; ``AclAuthorizer``;
- KRaft (4.x): a combined broker and controller whose storage is formatted with SCRAM users
  (``--add-scram``), since a fresh KRaft cluster has no other way in; ``StandardAuthorizer``.

SCRAM users do not exist before a broker runs, so brokers talk to each other (and the fixtures bootstrap)
with PLAIN as the broker's own user, named in the listener's JAAS. ``delegation.token.secret.key`` is set on
both: brokers derive every token's HMAC and SCRAM credentials from it.

The broker is ready when ``ready`` (a login, given by the caller) succeeds; its output goes to
``<directory>/broker.log``, whose tail the errors quote.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.cli.client.kafka_login import BrokerLogin, Credentials, login
from app.cli.server.embedded_zookeeper import die_with_parent, free_port
from app.cli.server.kafka_broker.release import KafkaRelease, KafkaUnavailable

LISTENER = "SASL_PLAINTEXT"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
ZOOKEEPER_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
KRAFT_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
LOG_FILE = "broker.log"

# Both logging back ends (3.x: reload4j, 4.x: log4j2) to standard output, which goes to broker.log. INFO for
# start and stop, failed logins (Selector) and denied operations (the authorizer's logger); WARN for the rest,
# but for the connections a starting broker's controller tries before its listener is up (ERROR).
_LOG4J = """\
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaServer=INFO
log4j.logger.kafka.server.BrokerServer=INFO
log4j.logger.kafka.Kafka$=INFO
log4j.logger.kafka.server.DelegationTokenManager=INFO
log4j.logger.kafka.authorizer.logger=INFO
log4j.logger.org.apache.kafka.common.network.Selector=INFO
log4j.logger.kafka.controller.RequestSendThread=ERROR
log4j.logger.org.apache.kafka.clients.NetworkClient=ERROR
"""
_LOG4J2 = """\
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.server.name = kafka.server.BrokerServer
logger.server.level = INFO
logger.kafka.name = kafka.Kafka$
logger.kafka.level = INFO
logger.controller.name = kafka.server.ControllerServer
logger.controller.level = INFO
logger.selector.name = org.apache.kafka.common.network.Selector
logger.selector.level = INFO
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = INFO
logger.network.name = org.apache.kafka.clients.NetworkClient
logger.network.level = ERROR
"""
# The tools print their answers on standard output: their own logging goes to standard error, warnings only.
_TOOLS_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
_TOOLS_LOG4J2 = """\
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""


def write_tools_logging(directory: Path) -> list[str]:
    """The tools' logging configurations (both back ends) in ``directory``; the JVM options naming them."""
    (directory / "tools-log4j.properties").write_text(_TOOLS_LOG4J)
    (directory / "tools-log4j2.properties").write_text(_TOOLS_LOG4J2)
    return [
        f"-Dlog4j.configuration=file:{directory / 'tools-log4j.properties'}",
        f"-Dlog4j2.configurationFile={directory / 'tools-log4j2.properties'}",
    ]


class BrokerFailed(RuntimeError):
    """The broker exited or did not become ready; the message ends with the tail of its log."""


@dataclass(frozen=True)
class User:
    name: str
    password: str = field(repr=False)

    @property
    def principal(self) -> str:
        return f"User:{self.name}"


def jaas(module: str, user: User, *, token: bool = False) -> str:
    """A client's ``sasl.jaas.config`` (``token``: a delegation token's, ``user`` being its id and HMAC)."""
    extension = ' tokenauth="true"' if token else ""
    return f'{module} required username="{user.name}" password="{user.password}"{extension};'


def client_properties(user: User, mechanism: str = "SCRAM-SHA-512", *, token: bool = False) -> dict[str, str]:
    """What a Kafka client (a tool's ``--command-config``, a producer) needs to log in on the SASL listener."""
    module = PLAIN_LOGIN_MODULE if mechanism == "PLAIN" else SCRAM_LOGIN_MODULE
    return {
        "security.protocol": LISTENER,
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": jaas(module, user, token=token),
    }


def write_properties(path: Path, values: Mapping[str, str]) -> Path:
    """A Java properties file, readable by this user only (it holds the secret key or a password); values here
    never hold newlines, and backslashes are escaped."""
    text = "".join(f"{key}={value.replace(chr(92), chr(92) * 2)}\n" for key, value in values.items())
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


class KafkaBroker:
    """One broker process. ``zookeeper_connect`` (with its chroot) selects ZooKeeper mode, else KRaft;
    ``scram_users`` are formatted into a KRaft node's storage (ZooKeeper mode reads its users from ZooKeeper).
    """

    def __init__(
        self,
        release: KafkaRelease,
        directory: Path,
        *,
        secret: str,
        zookeeper_connect: str | None = None,
        super_users: Iterable[str] = (),
        scram_users: Iterable[User] = (),
        port: int | None = None,
        heap: str = "512m",
        extra_properties: Mapping[str, str] | None = None,
    ) -> None:
        if release.zookeeper_mode != (zookeeper_connect is not None):
            mode = "needs zookeeper_connect" if release.zookeeper_mode else "has no ZooKeeper mode"
            raise ValueError(f"Kafka {release.version} {mode}")
        self.release = release
        self.directory = directory
        self.secret = secret
        self.zookeeper_connect = zookeeper_connect
        self.port = port or free_port()
        self.controller_port = None if zookeeper_connect else free_port()
        self.broker_user = User("broker", secrets.token_urlsafe(18))  # PLAIN, between brokers and to bootstrap
        # KRaft: the controller listener is PLAINTEXT on loopback, so the broker half reaches it as
        # User:ANONYMOUS, which must be a super user of the StandardAuthorizer (as in Kafka's own examples).
        anonymous = () if zookeeper_connect else ("User:ANONYMOUS",)
        self.super_users = tuple(dict.fromkeys((self.broker_user.principal, *super_users, *anonymous)))
        self.scram_users = tuple(scram_users)
        self.heap = heap
        self.extra_properties = dict(extra_properties or {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_FILE

    def properties(self) -> dict[str, str]:
        plain = (
            f'{PLAIN_LOGIN_MODULE} required username="{self.broker_user.name}" '
            f'password="{self.broker_user.password}" user_{self.broker_user.name}="{self.broker_user.password}";'
        )
        scram = f"{SCRAM_LOGIN_MODULE} required;"
        values = {
            "log.dirs": str(self.directory / "data"),
            "sasl.enabled.mechanisms": ",".join(("PLAIN", *SCRAM_MECHANISMS)),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "inter.broker.listener.name": LISTENER,
            f"listener.name.{LISTENER.lower()}.plain.sasl.jaas.config": plain,
            **{
                f"listener.name.{LISTENER.lower()}.{mechanism.lower()}.sasl.jaas.config": scram
                for mechanism in SCRAM_MECHANISMS
            },
            "delegation.token.secret.key": self.secret,
            "super.users": ";".join(self.super_users),
            "allow.everyone.if.no.acl.found": "false",
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
        }
        if self.zookeeper_connect is not None:
            values |= {
                "broker.id": "0",
                "zookeeper.connect": self.zookeeper_connect,
                "zookeeper.session.timeout.ms": "18000",
                "listeners": f"{LISTENER}://{self.bootstrap}",
                "advertised.listeners": f"{LISTENER}://{self.bootstrap}",
                "authorizer.class.name": ZOOKEEPER_AUTHORIZER,
            }
        else:
            values |= {
                "process.roles": "broker,controller",
                "node.id": "1",
                "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
                "controller.listener.names": "CONTROLLER",
                "listeners": f"{LISTENER}://{self.bootstrap},CONTROLLER://127.0.0.1:{self.controller_port}",
                "advertised.listeners": f"{LISTENER}://{self.bootstrap}",
                "listener.security.protocol.map": f"{LISTENER}:{LISTENER},CONTROLLER:PLAINTEXT",
                "authorizer.class.name": KRAFT_AUTHORIZER,
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
            }
        return values | self.extra_properties

    def _java(self, main_class: str, *arguments: str, server: bool = False) -> list[str]:
        """A tool is short-lived: a small heap and only the quick compiler (it starts faster)."""
        # Tools print dates (kafka-delegation-tokens.sh): in UTC, whatever the machine's zone.
        tuning = [f"-Xmx{self.heap}"] if server else ["-Xmx256m", "-XX:TieredStopAtLevel=1", "-Duser.timezone=UTC"]
        logging = "" if server else "tools-"
        return [
            "java",
            *tuning,
            "-XX:+UseSerialGC",
            f"-Dlog4j.configuration=file:{self.directory / f'{logging}log4j.properties'}",
            f"-Dlog4j2.configurationFile={self.directory / f'{logging}log4j2.properties'}",
            "-cp",
            self.release.classpath,
            main_class,
            *arguments,
        ]

    def start(self, ready: Callable[[KafkaBroker], bool], timeout_s: float = 120.0) -> None:
        """Start the process and poll ``ready(self)`` until it returns True. Raises BrokerFailed."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.directory / "log4j.properties").write_text(_LOG4J)
        (self.directory / "log4j2.properties").write_text(_LOG4J2)
        write_tools_logging(self.directory)
        config = write_properties(self.directory / "server.properties", self.properties())
        if self.zookeeper_connect is None:
            self._format(config)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(  # noqa: S603 - fixed command line, no shell
                self._java("kafka.Kafka", str(config), server=True),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.directory,
                start_new_session=True,  # a Ctrl-C in the terminal reaches kts, which stops the broker in order
                preexec_fn=die_with_parent,
                umask=0o077,  # its data holds SCRAM credentials
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerFailed(f"Kafka {self.release.version} exited with {self.process.returncode}" + self._tail())
            try:
                if ready(self):
                    return
            except Exception:  # noqa: S110 - not up yet; the deadline decides
                pass
            time.sleep(0.25)
        self.stop()
        raise BrokerFailed(f"Kafka {self.release.version} was not ready within {timeout_s:.0f} s" + self._tail())

    def _format(self, config: Path) -> None:
        """Format a KRaft node's storage, with its SCRAM users (done once: a formatted directory is kept)."""
        if (self.directory / "data" / "meta.properties").exists():
            return
        cluster_id = self.run_tool("StorageTool", "random-uuid").stdout.strip()
        scram = [
            argument
            for user in self.scram_users
            for mechanism in SCRAM_MECHANISMS
            for argument in ("--add-scram", f"{mechanism}=[name={user.name},password={user.password}]")
        ]
        self.run_tool("StorageTool", "format", "-t", cluster_id, "-c", str(config), *scram)

    def run_tool(
        self, tool: str, *arguments: str, check: bool = True, timeout_s: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run one of the release's tools (``AclCommand``, ``ConfigCommand``, ``DelegationTokenCommand``,
        ``StorageTool``, ...) with these arguments. ``check``: raise BrokerFailed when it exits non-zero."""
        result = subprocess.run(  # noqa: S603 - fixed command line, no shell
            self._java(self.release.main_class(tool), *arguments),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            cwd=self.directory,
        )
        if check and result.returncode != 0:
            raise BrokerFailed(f"{tool} exited with {result.returncode}: {(result.stdout + result.stderr).strip()}")
        return result

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL if it does not end in time."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _tail(self) -> str:
        tail = self.log_tail()
        return f"; the end of {self.log_path}:\n{tail}" if tail else ""


def takes_its_own_login(broker: KafkaBroker) -> bool:
    """A readiness check: the broker authenticates its own PLAIN user on its listener (LoginError while not)."""
    user = broker.broker_user
    login(BrokerLogin((broker.bootstrap,), LISTENER, "PLAIN"), Credentials(user.name, user.password), timeout_s=5)
    return True


__all__ = ["BrokerFailed", "KafkaBroker", "KafkaUnavailable", "User", "client_properties", "jaas"]
