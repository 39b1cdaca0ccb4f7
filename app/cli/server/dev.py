"""``kts dev``: the one-command local stack (embedded ZooKeeper, SQLite audit, admin user, service, and with
``--kafka`` a real Kafka broker that takes the stack's tokens)."""

from __future__ import annotations

import os
import secrets
from enum import Enum
from pathlib import Path

from rich.console import Console

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.cli.server.kafka_broker.broker import KafkaBroker
from app.cli.server.kafka_broker.dev_broker import banner, start_dev_broker
from app.cli.server.listener_check import ListenerUnavailable, check_bindable
from app.cli.server.serve import serve
from app.domain.credentials import MIN_ITERATIONS, Mechanism
from app.domain.scram import derive, password_matches
from app.runtime import check_zookeeper, zk_connection
from app.settings import Settings, load_settings, read_properties
from app.storage.zk.user_store import ZkUserStore

ADMIN_USER = "admin"
ADMIN_PASSWORD_ENV = "KTS_ADMIN_PASSWORD"
SECRET_FILE = "secret.key"
DEV_HOST = "127.0.0.1"
FREE_PORT_EXAMPLE = 8081


def _secret_key(data_dir: Path) -> str:
    """A random secret kept in the data dir (mode 0600), so tokens survive restarts of the dev stack."""
    path = data_dir / SECRET_FILE
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


class AdminPassword(Enum):
    """What start-up did to the admin's password, so the banner says exactly that."""

    GENERATED = "generated"  # none existed and KTS_ADMIN_PASSWORD is unset: a new one, printed once
    SET = "set"  # none existed: KTS_ADMIN_PASSWORD's
    RESET = "reset"  # the admin had another one: replaced by KTS_ADMIN_PASSWORD's
    SAME = "same"  # the admin's password already is KTS_ADMIN_PASSWORD's: nothing written
    KEPT = "kept"  # KTS_ADMIN_PASSWORD is unset and the admin has a password: left alone


def _ensure_admin(settings: Settings) -> tuple[AdminPassword, str | None]:
    """Give the admin its credentials; returns what was done, and the password when it was generated."""
    outcome: list[tuple[AdminPassword, str | None]] = []

    def give(users: ZkUserStore) -> None:
        existing = users.credentials(ADMIN_USER)
        password = os.environ.get(ADMIN_PASSWORD_ENV)
        if not password:
            if existing:
                outcome.append((AdminPassword.KEPT, None))
                return
            password = secrets.token_urlsafe(18)
            outcome.append((AdminPassword.GENERATED, password))
        elif set(existing) == set(Mechanism) and all(
            password_matches(mechanism, credential, password) for mechanism, credential in existing.items()
        ):
            outcome.append((AdminPassword.SAME, None))
            return
        else:
            outcome.append((AdminPassword.RESET if existing else AdminPassword.SET, None))
        for mechanism in Mechanism:
            users.put_credential(ADMIN_USER, mechanism, derive(mechanism, password, MIN_ITERATIONS))

    zk = zk_connection(settings)
    # check(): connect, run, disconnect, with kazoo's own log lines held back (logging is not configured yet,
    # and "Connection dropped" on stderr before the banner reads like a failure).
    zk.check(then=lambda: give(ZkUserStore(zk)))
    return outcome[0]


def banner_password_line(done: AdminPassword, generated: str | None) -> str:
    """The banner's line about the admin's password: true whatever the data dir and the environment held."""
    if done is AdminPassword.GENERATED:
        return f"  super user: {ADMIN_USER}  password: [bold]{generated}[/bold]  (shown only now)"
    if done is AdminPassword.SET:
        return f"  super user: {ADMIN_USER}  password: {ADMIN_PASSWORD_ENV}'s (set now)"
    if done is AdminPassword.RESET:
        return f"  super user: {ADMIN_USER}  password: {ADMIN_PASSWORD_ENV}'s (it replaced the one {ADMIN_USER} had)"
    if done is AdminPassword.SAME:
        return f"  super user: {ADMIN_USER}  password: {ADMIN_PASSWORD_ENV}'s (unchanged)"
    return f"  super user: {ADMIN_USER}  password: unchanged, not shown again (set {ADMIN_PASSWORD_ENV} to reset it)"


def _keep_private(data_dir: Path) -> None:
    """The data dir holds the secret key, the audit database and ZooKeeper's files (the admin's SCRAM
    verifier among them): everything in it is the current user's only, 0700 for directories and 0600 for
    files. The umask covers what is created from now on (ZooKeeper inherits it); chmod what a stack started
    before this rule left behind."""
    os.umask(0o077)
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700)
    for root, directories, files in os.walk(data_dir):
        for name in directories:
            Path(root, name).chmod(0o700)
        for name in files:
            path = Path(root, name)
            if not path.is_symlink():
                path.chmod(0o600)


def dev(port: int, data_dir: Path, config_file: Path | None, console: Console, *, kafka_port: int | None = None) -> int:
    """``kafka_port``: also run a Kafka broker on that port (``--kafka``)."""
    # Before anything else: a busy port found after ZooKeeper started and the banner printed is a bind error
    # under a success message.
    for wanted, option, hint in (
        (port, "--port", f" (make run PORT={FREE_PORT_EXAMPLE})"),
        (kafka_port, "--kafka-port", ""),
    ):
        if wanted is None:
            continue
        try:
            check_bindable(DEV_HOST, wanted, named_by=option)
        except ListenerUnavailable as exc:
            raise ListenerUnavailable(f"{exc}; choose a free one with {option}{hint}") from exc
    _keep_private(data_dir)
    zookeeper: EmbeddedZooKeeper | None = None
    broker: KafkaBroker | None = None
    overrides: dict[str, object] = {
        "http_listeners": f"http://{DEV_HOST}:{port}",
        "audit_db_url": f"sqlite:///{(data_dir / 'audit.db').resolve()}",
    }
    if not os.environ.get("KTS_DELEGATION_TOKEN_SECRET_KEY"):
        overrides["delegation_token_secret_key"] = _secret_key(data_dir)
    try:
        if not os.environ.get("KTS_ZOOKEEPER_CONNECT") and not _file_sets_connect(config_file):
            zookeeper = EmbeddedZooKeeper(data_dir / "zookeeper")
            console.print(f"starting ZooKeeper on 127.0.0.1:{zookeeper.port} ...")
            zookeeper.start()
            overrides["zookeeper_connect"] = zookeeper.connect_string
            if kafka_port is None:
                # No broker on the embedded ZooKeeper, so no /cluster/id: the one place kts runs without one.
                overrides["zookeeper_cluster_required"] = False
        base = load_settings(config_file, **overrides)
        super_users = ";".join(filter(None, (base.super_users, f"User:{ADMIN_USER}")))
        settings = load_settings(config_file, **overrides, super_users=super_users)
        if kafka_port is not None:
            # First: the broker writes the /cluster/id kts requires (zookeeper.cluster.required) before it starts.
            broker = start_dev_broker(
                data_dir,
                settings.zookeeper_connect_string,
                settings.secret_key,
                kafka_port,
                f"User:{ADMIN_USER}",
                console.print,
            )
        done, generated = _ensure_admin(settings)
        check_zookeeper(settings)  # the secret kept in the data dir against the cluster's, before the banner
        console.print(f"[bold]kts dev[/bold] on [link]{settings.http_listeners}[/link]  (data in {data_dir})")
        console.print(f"  ZooKeeper: {settings.zookeeper_connect}")
        console.print(banner_password_line(done, generated))
        if broker is not None:
            for line in banner(broker, settings.http_listeners):
                console.print(line, markup=False, highlight=False, soft_wrap=True)  # copied as it is: no wrapping
        return serve(settings, default_log_format="text")
    finally:
        if broker is not None:
            broker.stop()
        if zookeeper is not None:
            zookeeper.stop()


def _file_sets_connect(config_file: Path | None) -> bool:
    if config_file is None or not config_file.is_file():
        return False
    return bool(read_properties(config_file).get("zookeeper.connect"))
