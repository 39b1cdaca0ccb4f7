"""The ZooKeeper backend's group of settings: ``zookeeper.connect`` (which selects this backend), the session's
timeouts and security, the token znode format and the child-list budget, read and checked here rather than in
app/settings.py, which reads the file and the environment and hands each backend's keys to its group.

Each field's alias is its key as app/settings.py names keys (``zookeeper.session.timeout.ms`` ->
``zookeeper_session_timeout_ms``, variable ``KTS_ZOOKEEPER_SESSION_TIMEOUT_MS``), so a refusal names the key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from app.domain.capacity import DEFAULT_MAX_BYTES as DEFAULT_CHILDREN_MAX_BYTES
from app.domain.capacity import REPLY_FIXED_BYTES
from app.domain.errors import InvalidPrincipal
from app.domain.jaas import JaasSyntaxError, parse_login_module
from app.domain.principal import KafkaPrincipal
from app.domain.token_share import DEFAULT_RATIO as DEFAULT_SHARE_RATIO
from app.domain.token_share import share_problem
from app.storage.zk.client_security import ZkClientSecurity, client_security

_CONNECT = re.compile(r"[^,/\s:]+:\d{1,5}(,[^,/\s:]+:\d{1,5})*(/[^\s]*)?")


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()


class ZooKeeperSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: ClassVar[str] = "zookeeper"
    selector: ClassVar[str] = "zookeeper_connect"
    purpose: ClassVar[str] = "a ZooKeeper-mode cluster"

    # The cluster, read and written in ZooKeeper (a ZooKeeper-mode Kafka cluster).
    connect: str | None = Field(None, alias="zookeeper_connect")
    session_timeout_ms: int = Field(18_000, ge=1_000, le=600_000, alias="zookeeper_session_timeout_ms")
    # How long start-up waits for a ZooKeeper session; unset, as in Kafka, zookeeper.session.timeout.ms.
    connection_timeout_ms: int | None = Field(None, ge=100, le=600_000, alias="zookeeper_connection_timeout_ms")
    # kts key: refuse to start where no broker ever wrote /cluster/id (a mistyped chroot); false only to run
    # kts before the cluster's first broker
    cluster_required: bool = Field(True, alias="zookeeper_cluster_required")
    # ZooKeeper security: Kafka's keys where kazoo can honour them, kts keys for SASL and PEM files
    # (checked together by app/storage/zk/client_security.py; docs/operations.md#zookeeper-security)
    set_acl: bool = Field(False, alias="zookeeper_set_acl")
    sasl_username: str | None = Field(None, alias="zookeeper_sasl_username")
    sasl_password: SecretStr | None = Field(None, alias="zookeeper_sasl_password")
    jaas_file: Path | None = Field(None, alias="zookeeper_jaas_file")
    # the JAAS section, as ZooKeeper's system property names it
    sasl_clientconfig: str = Field("Client", alias="zookeeper_sasl_clientconfig")
    ssl_client_enable: bool = Field(False, alias="zookeeper_ssl_client_enable")
    ssl_cafile: Path | None = Field(None, alias="zookeeper_ssl_cafile")
    ssl_certfile: Path | None = Field(None, alias="zookeeper_ssl_certfile")
    ssl_keyfile: Path | None = Field(None, alias="zookeeper_ssl_keyfile")
    ssl_keyfile_password: SecretStr | None = Field(None, alias="zookeeper_ssl_keyfile_password")
    ssl_endpoint_identification_algorithm: str = Field("HTTPS", alias="zookeeper_ssl_endpoint_identification_algorithm")
    token_znode_version: int = Field(3, alias="token_znode_version")
    # kts key: User principals (``;``-separated) named renewers of every token kts creates, so that kts on
    # bootstrap.servers, logged in as one of them, can renew and expire them after a migration to KRaft
    token_renewers_add: str = Field("", alias="token_renewers_add")
    # cluster capacity guard (app/domain/capacity.py): the largest getChildren reply, in bytes, kts lets either
    # /delegation_token/tokens or /delegation_token/token_changes grow to; keep it under brokers' jute.maxbuffer
    children_max_bytes: int = Field(
        DEFAULT_CHILDREN_MAX_BYTES, gt=REPLY_FIXED_BYTES, alias="zookeeper_children_max_bytes"
    )
    # each principal's share of that budget for its token writes (app/domain/token_share.py); 0 = no shares
    write_share_ratio: float = Field(
        DEFAULT_SHARE_RATIO, ge=0, le=1, allow_inf_nan=False, alias="token_write_share_ratio"
    )
    # kts's login on bootstrap.servers after a migration (the Kafka backend's key), read here for
    # ``kts cluster prepare-migration``
    admin_sasl_jaas_config: SecretStr | None = Field(None, alias="admin_sasl_jaas_config")
    # Derived once while loading (the JAAS file is read then, not each time the value is used).
    _security: ZkClientSecurity = PrivateAttr(default_factory=ZkClientSecurity)

    @field_validator("connect")
    @classmethod
    def _connect_string(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not _CONNECT.fullmatch(value.strip()):
            raise ValueError("must be host:port[,host:port...][/chroot]")
        return value.strip()

    @field_validator("token_znode_version")
    @classmethod
    def _znode_version(cls, value: int) -> int:
        if value not in (1, 3):
            raise ValueError("must be 1 (Kafka 1.1 to 3.2 brokers) or 3 (Kafka 3.3 and later)")
        return value

    @field_validator("token_renewers_add")
    @classmethod
    def _renewers(cls, value: str) -> str:
        items = [part.strip() for part in value.split(";") if part.strip()]
        principals = []
        for item in items:  # every entry a principal first, then each a User (as Kafka checks them)
            try:
                principals.append(KafkaPrincipal.parse(item))
            except InvalidPrincipal as exc:
                raise ValueError(f"{item!r} is not a principal: {exc.message}") from None
        for item, principal in zip(items, principals, strict=True):
            if not principal.is_user:
                raise ValueError(f"{item!r}: a renewer must be a principal of type User, as Kafka requires")
        return value

    @model_validator(mode="after")
    def _write_share(self) -> ZooKeeperSettings:
        problem = share_problem(self.children_max_bytes, self.write_share_ratio)
        if problem is not None:
            raise ValueError(f"token.write.share.ratio: {problem}")
        return self

    @property
    def selected(self) -> bool:
        """Whether these keys choose this backend: wherever zookeeper.connect is set (as before bootstrap.servers
        existed)."""
        return self.connect is not None

    def derive(self, in_use: bool) -> None:
        """Checks the ZooKeeper security keys together (raises ValueError naming the bad key), whichever backend is
        in use, and keeps the result, so the JAAS file is read once, at load."""
        self._security = client_security(
            set_acl=self.set_acl,
            sasl_username=self.sasl_username,
            sasl_password=_secret(self.sasl_password),
            jaas_file=self.jaas_file,
            jaas_section=self.sasl_clientconfig,
            ssl_client_enable=self.ssl_client_enable,
            ssl_cafile=self.ssl_cafile,
            ssl_certfile=self.ssl_certfile,
            ssl_keyfile=self.ssl_keyfile,
            ssl_keyfile_password=_secret(self.ssl_keyfile_password),
            ssl_endpoint_identification_algorithm=self.ssl_endpoint_identification_algorithm,
        )

    @property
    def connect_string(self) -> str:
        """``zookeeper.connect`` (set wherever this backend is the one in use)."""
        assert self.connect is not None, "zookeeper.connect: missing"
        return self.connect

    @property
    def security(self) -> ZkClientSecurity:
        """How the ZooKeeper session authenticates, encrypts and sets znode ACLs (derived at load)."""
        return self._security

    @property
    def added_renewers(self) -> tuple[KafkaPrincipal, ...]:
        """``token.renewers.add``, in order, each once."""
        parsed = (KafkaPrincipal.parse(p.strip()) for p in self.token_renewers_add.split(";") if p.strip())
        return tuple(dict.fromkeys(parsed))

    @property
    def kafka_login_principal(self) -> KafkaPrincipal | None:
        """``User:<username>`` of ``admin.sasl.jaas.config`` (kts's login on bootstrap.servers, PLAIN or SCRAM), for
        ``kts cluster prepare-migration``; None when the key is not set. ValueError naming the key when it names
        no user."""
        if self.admin_sasl_jaas_config is None or not self.admin_sasl_jaas_config.get_secret_value().strip():
            return None
        try:
            module = parse_login_module(self.admin_sasl_jaas_config.get_secret_value())
        except JaasSyntaxError as exc:
            raise ValueError(f"admin.sasl.jaas.config: {exc.reason}") from None
        username = module.options.get("username")
        if not username:
            raise ValueError(
                "admin.sasl.jaas.config: names no user (a username option, as PLAIN and SCRAM logins have)"
            )
        return KafkaPrincipal.user(username)
