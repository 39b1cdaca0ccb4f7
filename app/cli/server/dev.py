"""``kts dev``: the one-command local stack (SQLite audit, admin user, service) on an embedded ZooKeeper, with
``--kafka`` a real Kafka 3.9 broker on it that takes the stack's tokens; with ``--kraft`` a Kafka 4.x KRaft
broker instead of ZooKeeper, kts on its ``bootstrap.servers``; or, with ``bootstrap.servers`` in ``--config``,
kts on that cluster."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from rich.console import Console

from app.backends import check_cluster
from app.cli.server.dev_admin import (
    ADMIN_USER,
    banner_password_line,
    ensure_zookeeper_admin,
    known_password,
    print_banner,
    with_admin,
)
from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.cli.server.kafka_broker.broker import KafkaBroker, User
from app.cli.server.kafka_broker.dev_broker import banner, start_dev_broker, write_admin_config
from app.cli.server.listener_check import ListenerUnavailable, check_bindable
from app.cli.server.serve import serve
from app.settings import ConfigError, load_settings, read_properties

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


def dev(
    port: int,
    data_dir: Path,
    config_file: Path | None,
    console: Console,
    *,
    kafka_port: int | None = None,
    kraft: bool = False,
) -> int:
    """``kafka_port``: also run a Kafka broker on that port (``--kafka``, or ``--kraft`` with ``kraft``)."""
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
    cluster = _cluster_named(config_file)
    # --kraft's broker is the cluster; --kafka's runs on a ZooKeeper (the embedded one, or the one named).
    if (kraft and cluster is not None) or (kafka_port is not None and cluster == "bootstrap.servers"):
        stack = "--kraft" if kraft else "--kafka"
        raise ConfigError(
            f"{cluster} is set ({_where(cluster, config_file)}) and {stack} runs a cluster of its own: drop one of them"
        )
    _keep_private(data_dir)
    overrides: dict[str, object] = {
        "http_listeners": f"http://{DEV_HOST}:{port}",
        "audit_db_url": f"sqlite:///{(data_dir / 'audit.db').resolve()}",
    }
    if not _given("delegation.token.secret.key", config_file):
        overrides["delegation_token_secret_key"] = _secret_key(data_dir)
    if kraft:
        from app.cli.server.dev_kraft import dev_kraft

        assert kafka_port is not None
        return dev_kraft(data_dir, config_file, overrides, kafka_port, console)
    if cluster == "bootstrap.servers":
        return _dev_on_cluster(data_dir, config_file, overrides, console)
    return _dev_zookeeper(data_dir, config_file, overrides, kafka_port, console, own_zookeeper=cluster is None)


def _dev_zookeeper(
    data_dir: Path,
    config_file: Path | None,
    overrides: dict[str, object],
    kafka_port: int | None,
    console: Console,
    *,
    own_zookeeper: bool,
) -> int:
    """The ZooKeeper stack: the embedded ZooKeeper unless the file or environment names one, the admin in it."""
    zookeeper: EmbeddedZooKeeper | None = None
    broker: KafkaBroker | None = None
    try:
        if own_zookeeper:
            zookeeper = EmbeddedZooKeeper(data_dir / "zookeeper")
            console.print(f"starting ZooKeeper on 127.0.0.1:{zookeeper.port} ...")
            zookeeper.start()
            overrides["zookeeper_connect"] = zookeeper.connect_string
            if kafka_port is None:
                # No broker on the embedded ZooKeeper, so no /cluster/id: the one place kts runs without one.
                overrides["zookeeper_cluster_required"] = False
        settings = with_admin(load_settings(config_file, **overrides), config_file, overrides)
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
        done, generated = ensure_zookeeper_admin(settings)
        check_cluster(settings)  # the secret kept in the data dir against the cluster's, before the banner
        console.print(f"[bold]kts dev[/bold] on [link]{settings.http_listeners}[/link]  (data in {data_dir})")
        console.print(f"  ZooKeeper: {settings.zookeeper_connect}")
        console.print(banner_password_line(done, generated))
        if broker is not None:
            password = known_password(done, generated)
            if password is not None:
                write_admin_config(broker, User(ADMIN_USER, password))
            print_banner(console, banner(broker, settings.http_listeners, data_dir))
        return serve(settings, default_log_format="text")
    finally:
        if broker is not None:
            broker.stop()
        if zookeeper is not None:
            zookeeper.stop()


def _dev_on_cluster(data_dir: Path, config_file: Path | None, overrides: dict[str, object], console: Console) -> int:
    """``bootstrap.servers`` in the file or environment: kts on that cluster, as the file's ``admin.*`` login. The
    cluster's users are its own: kts dev neither creates an admin there nor makes one a super user."""
    settings = load_settings(config_file, **overrides)
    check_cluster(settings)
    console.print(f"[bold]kts dev[/bold] on [link]{settings.http_listeners}[/link]  (data in {data_dir})")
    console.print(f"  Kafka cluster: {settings.bootstrap_servers} (bootstrap.servers; kts logs in with admin.*)")
    console.print(f"  super users: {settings.super_users or 'none'} (super.users; kts dev sets no password there)")
    return serve(settings, default_log_format="text")


_CLUSTER_KEYS = ("zookeeper.connect", "bootstrap.servers")


def _cluster_named(config_file: Path | None) -> str | None:
    """The cluster key the environment or the file sets (``zookeeper.connect`` first, as kts reads them)."""
    for key in _CLUSTER_KEYS:
        if _given(key, config_file):
            return key
    return None


def _given(key: str, config_file: Path | None) -> bool:
    if os.environ.get("KTS_" + key.upper().replace(".", "_")):
        return True
    if config_file is None or not config_file.is_file():
        return False
    return bool(read_properties(config_file).get(key))


def _where(key: str, config_file: Path | None) -> str:
    variable = "KTS_" + key.upper().replace(".", "_")
    return f"in {variable}" if os.environ.get(variable) else f"in {config_file}"
