"""``kts dev --kafka``: one real Kafka broker beside the local stack, so a newcomer produces a record with a kts
token in the first minutes.

Kafka 3.9 in ZooKeeper mode on the stack's ZooKeeper (no chroot: the dev stack's ZooKeeper is its own), with the
stack's secret, so it takes every token kts issues; ``admin`` is a super user, as in kts. Its data stays in the
stack's data dir; its jars come from Maven Central into the per-machine cache, once (``release.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.cli.server.kafka_broker.broker import (
    LISTENER,
    SCRAM_LOGIN_MODULE,
    KafkaBroker,
    User,
    client_properties,
    takes_its_own_login,
    write_properties,
)
from app.cli.server.kafka_broker.dev_layout import ADMIN_CONFIG, DEFAULT_DATA_DIR, ZOOKEEPER_MODE_STACK
from app.cli.server.kafka_broker.release import ZOOKEEPER_MODE_RELEASE, cache_root, fetch, is_cached

DEFAULT_PORT = 9092
TOKEN_MECHANISM = "SCRAM-SHA-512"


def start_dev_broker(
    data_dir: Path, zookeeper_connect: str, secret: str, port: int, super_user: str, say: Callable[[str], None]
) -> KafkaBroker:
    """Fetch (first time only) and start the broker; returns once it takes logins. KafkaUnavailable or
    BrokerFailed (with the broker's log tail) when it cannot."""
    if not is_cached(ZOOKEEPER_MODE_RELEASE):
        say(f"fetching Kafka {ZOOKEEPER_MODE_RELEASE} with Maven into {cache_root()} (once, about 55 MB) ...")
    release = fetch(ZOOKEEPER_MODE_RELEASE)
    broker = KafkaBroker(
        release,
        data_dir / ZOOKEEPER_MODE_STACK,
        secret=secret,
        zookeeper_connect=zookeeper_connect,
        super_users=[super_user],
        port=port,
        # A newcomer's first record goes to a topic that does not exist yet.
        extra_properties={"auto.create.topics.enable": "true"},
    )
    say(f"starting Kafka {release.version} on {broker.bootstrap} (log: {broker.log_path}) ...")
    broker.start(takes_its_own_login, timeout_s=180)
    return broker


def write_admin_config(broker: KafkaBroker, admin: User) -> Path:
    return write_properties(broker.directory / ADMIN_CONFIG, client_properties(admin, TOKEN_MECHANISM))


def banner(broker: KafkaBroker, kts_url: str, data_dir: Path) -> list[str]:
    """How to produce a record with a token, and to run Kafka's tools, for the stack's banner (no secret in it)."""
    jaas = f'{SCRAM_LOGIN_MODULE} required username="<tokenId>" password="<hmac>" tokenauth="true";'
    mode = "ZooKeeper mode" if broker.release.zookeeper_mode else "KRaft, broker and controller"
    where = "" if data_dir == DEFAULT_DATA_DIR else f" --data-dir {data_dir}"
    return [
        f"  Kafka {broker.release.version} ({mode}): {broker.bootstrap} ({LISTENER}, SCRAM-SHA-256/512, "
        f"delegation tokens from kts; data in {broker.directory})",
        f"  Kafka's tools as the admin: kts kafka{where} --admin acls --list "
        f"(--admin: --command-config {broker.directory / ADMIN_CONFIG})",
        "  a token's client properties, for kafka-console-producer.sh --producer.config FILE "
        f"(its id and HMAC: kts tokens --create --server {kts_url}):",
        f"    bootstrap.servers={broker.bootstrap}",
        f"    security.protocol={LISTENER}",
        f"    sasl.mechanism={TOKEN_MECHANISM}",
        f"    sasl.jaas.config={jaas}",
    ]
