"""``kts dev --kraft``: a Kafka 4.x broker in KRaft mode beside the local stack, with kts on its
``bootstrap.servers`` (the Kafka-protocol backend) as a production kts on a KRaft cluster would be.

One process is both broker and controller, with the stack's ``delegation.token.secret.key`` (a KRaft
controller derives every token's HMAC, so it needs the secret too). A fresh KRaft cluster has no other way in
than SCRAM users formatted into its storage (``kafka-storage format --add-scram``): the stack's ``admin``, a
super user of the broker and of kts, and ``kts``, kts's own principal, which is no super user but has the grants
kts needs (docs/configuration.md), given by the broker's own PLAIN user once it runs. ``kts``'s password is
random and kept in the stack's directory (mode 0600), as the secret key is; the admin's password comes from
``KTS_ADMIN_PASSWORD`` or is generated, as on the ZooKeeper stack.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    KafkaAdminClient,
    ResourcePattern,
    ResourceType,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from app.cli.client.kafka_login import BrokerLogin, Credentials, LoginError, login
from app.cli.server.dev_admin import ADMIN_PASSWORD_ENV, ADMIN_USER, AdminPassword
from app.cli.server.kafka_broker.broker import (
    LISTENER,
    SCRAM_LOGIN_MODULE,
    SCRAM_MECHANISMS,
    BrokerFailed,
    KafkaBroker,
    User,
    jaas,
    takes_its_own_login,
)
from app.cli.server.kafka_broker.dev_broker import TOKEN_MECHANISM, write_admin_config
from app.cli.server.kafka_broker.dev_layout import KRAFT_STACK
from app.cli.server.kafka_broker.release import KRAFT_RELEASE, cache_root, fetch, is_cached
from app.cli.server.kept_secret import kept_secret

KTS_PRINCIPAL = "kts"
_KTS_PASSWORD_FILE = "kts.password"


@dataclass
class KraftDevStack:
    """The running broker, kts's login to it, and what start-up did to the admin's password."""

    broker: KafkaBroker
    kts: User
    admin_password: AdminPassword
    generated: str | None

    def kts_settings(self) -> dict[str, object]:
        """kts's keys for this broker: ``bootstrap.servers`` and the ``admin.*`` login as ``User:kts``."""
        return {
            "bootstrap_servers": self.broker.bootstrap,
            "admin_security_protocol": LISTENER,
            "admin_sasl_mechanism": TOKEN_MECHANISM,
            "admin_sasl_jaas_config": jaas(SCRAM_LOGIN_MODULE, self.kts),
        }


def kts_grants(principal: str) -> list[ACL]:
    """What kts's principal needs on a KRaft cluster (docs/configuration.md): tokens for every user, and the
    cluster's ACLs and SCRAM users."""
    users = ResourcePattern(ResourceType.USER, "*")
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    wanted = (
        (ACLOperation.CREATE_TOKENS, users),
        (ACLOperation.DESCRIBE_TOKENS, users),
        (ACLOperation.ALTER, cluster),
        (ACLOperation.DESCRIBE, cluster),
    )
    return [ACL(principal, "*", operation, ACLPermissionType.ALLOW, pattern) for operation, pattern in wanted]


def start_kraft_dev_broker(data_dir: Path, secret: str, port: int, say: Callable[[str], None]) -> KraftDevStack:
    """Fetch (first time only), format (first time only) and start the broker, give kts its grants and the admin
    its password; returns once kts's principal could log in. KafkaUnavailable or BrokerFailed when it cannot."""
    if not is_cached(KRAFT_RELEASE):
        say(f"fetching Kafka {KRAFT_RELEASE} with Maven into {cache_root()} (once, about 60 MB) ...")
    release = fetch(KRAFT_RELEASE)
    directory = data_dir / KRAFT_STACK
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    kts = User(KTS_PRINCIPAL, _kept_password(directory / _KTS_PASSWORD_FILE))
    wanted = os.environ.get(ADMIN_PASSWORD_ENV)
    formatted = (directory / "data" / "meta.properties").exists()
    generated = None if formatted or wanted else secrets.token_urlsafe(18)
    first_password = wanted or generated
    broker = KafkaBroker(
        release,
        directory,
        secret=secret,
        super_users=[f"User:{ADMIN_USER}"],
        # Formatted once, with the storage; a formatted directory keeps the users it was formatted with.
        scram_users=[] if formatted or first_password is None else [User(ADMIN_USER, first_password), kts],
        port=port,
        # A newcomer's first record goes to a topic that does not exist yet.
        extra_properties={"auto.create.topics.enable": "true"},
    )
    say(f"starting Kafka {release.version} (KRaft) on {broker.bootstrap} (log: {broker.log_path}) ...")
    try:
        broker.start(takes_its_own_login, timeout_s=180)
        admin = _as_broker(broker)
        try:
            _grant(admin, f"User:{kts.name}")
            if formatted:
                done = _admin_password(broker, admin, wanted)
            else:
                done = AdminPassword.GENERATED if generated else AdminPassword.SET
        finally:
            admin.close()
        if first_password is not None:
            write_admin_config(broker, User(ADMIN_USER, first_password))
        _wait_for_login(broker, kts)
    except BaseException:  # Ctrl-C included: no broker left behind
        broker.stop()
        raise
    return KraftDevStack(broker, kts, done, generated)


def _kept_password(path: Path) -> str:
    """A random password kept in ``path`` (mode 0600), the same on every start of the stack."""
    return kept_secret(path, 24)


def _as_broker(broker: KafkaBroker) -> KafkaAdminClient:
    """An admin client as the broker's own PLAIN user, a super user of the broker."""
    user = broker.broker_user
    return KafkaAdminClient(
        bootstrap_servers=broker.bootstrap,
        security_protocol=LISTENER,
        sasl_mechanism="PLAIN",
        sasl_plain_username=user.name,
        sasl_plain_password=user.password,
        request_timeout_ms=60000,
    )


def _grant(admin: KafkaAdminClient, principal: str) -> None:
    """kts's grants (creating an ACL that exists already changes nothing, so every start gives them)."""
    result = admin.create_acls(kts_grants(principal))
    if result.get("failed"):
        raise BrokerFailed(f"the broker refused kts's grants: {result['failed']}")


def _admin_password(broker: KafkaBroker, admin: KafkaAdminClient, wanted: str | None) -> AdminPassword:
    """On a formatted broker: KTS_ADMIN_PASSWORD's password given to the admin unless it already has it."""
    if not wanted:
        return AdminPassword.KEPT
    try:
        for mechanism in SCRAM_MECHANISMS:
            login(BrokerLogin((broker.bootstrap,), LISTENER, mechanism), Credentials(ADMIN_USER, wanted), timeout_s=30)
        return AdminPassword.SAME
    except LoginError as exc:
        if not exc.refused:
            raise BrokerFailed(f"the broker did not answer the admin's login: {exc}") from exc
    # KRaft refuses two credentials of one user in one request: one request each.
    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        failed = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(ADMIN_USER, mechanism, wanted)])
        if failed != {ADMIN_USER: None}:
            raise BrokerFailed(f"the broker did not store the admin's {mechanism.name} password: {failed}")
    return AdminPassword.RESET


def _wait_for_login(broker: KafkaBroker, user: User, timeout_s: float = 120.0) -> None:
    """The broker learns formatted users from its metadata log as it starts: kts's first login waits for it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            login(BrokerLogin((broker.bootstrap,), LISTENER, TOKEN_MECHANISM), Credentials(user.name, user.password))
            return
        except LoginError as exc:
            if time.monotonic() > deadline or not broker.alive():
                raise BrokerFailed(
                    f"kts's principal could not log in: {exc}; the end of {broker.log_path}:\n{broker.log_tail()}"
                ) from exc
        time.sleep(0.25)
