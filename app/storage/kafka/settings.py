"""The Kafka-protocol backend's group of settings: ``bootstrap.servers`` (which selects this backend where
``zookeeper.connect`` is not set), kts's own login to the brokers (a Kafka admin client's keys, prefixed ``admin.``
as Kafka Connect names its admin client's) and the cache refresh, read and checked here rather than in
app/settings.py. Imports no Kafka client library: a ZooKeeper replica loads this module too.

Each field's alias is its key as app/settings.py names keys (``admin.request.timeout.ms`` ->
``admin_request_timeout_ms``, variable ``KTS_ADMIN_REQUEST_TIMEOUT_MS``), so a refusal names the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator

from app.storage.kafka.client_config import KafkaClientSecurity, bootstrap_servers, kafka_client_security


def _secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()


class KafkaSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: ClassVar[str] = "kafka"
    selector: ClassVar[str] = "bootstrap_servers"
    purpose: ClassVar[str] = "a cluster reached through the Kafka protocol"

    # Any cluster from Kafka 3.3 on, KRaft included, reached through the Kafka protocol.
    servers: str | None = Field(None, alias="bootstrap_servers")
    # kts's own login to the brokers (checked together by app/storage/kafka/client_config.py)
    security_protocol: str = Field("PLAINTEXT", alias="admin_security_protocol")
    sasl_mechanism: str = Field("GSSAPI", alias="admin_sasl_mechanism")
    sasl_jaas_config: SecretStr | None = Field(None, alias="admin_sasl_jaas_config")
    ssl_truststore_location: Path | None = Field(None, alias="admin_ssl_truststore_location")
    ssl_truststore_type: str = Field("PEM", alias="admin_ssl_truststore_type")
    ssl_keystore_location: Path | None = Field(None, alias="admin_ssl_keystore_location")
    ssl_keystore_type: str = Field("PEM", alias="admin_ssl_keystore_type")
    ssl_key_password: SecretStr | None = Field(None, alias="admin_ssl_key_password")
    ssl_endpoint_identification_algorithm: str = Field("https", alias="admin_ssl_endpoint_identification_algorithm")
    request_timeout_ms: int = Field(30_000, ge=1_000, le=600_000, alias="admin_request_timeout_ms")
    # How often each replica re-reads tokens and ACLs from the brokers
    cache_refresh_ms: int = Field(2_000, ge=100, le=3_600_000, alias="cluster_cache_refresh_ms")
    # Derived once while loading, when this backend is the one in use.
    _security: KafkaClientSecurity = PrivateAttr(default_factory=KafkaClientSecurity)

    @field_validator("servers")
    @classmethod
    def _bootstrap_servers(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return ",".join(bootstrap_servers(value))

    @property
    def selected(self) -> bool:
        """Whether these keys choose this backend (where no backend before it in the list is chosen)."""
        return self.servers is not None

    def derive(self, in_use: bool) -> None:
        """Checks the ``admin.*`` keys together (raises ValueError naming the bad key), for bootstrap.servers."""
        if not in_use:
            return
        self._security = kafka_client_security(
            security_protocol=self.security_protocol,
            sasl_mechanism=self.sasl_mechanism,
            sasl_jaas_config=_secret(self.sasl_jaas_config),
            truststore_location=self.ssl_truststore_location,
            truststore_type=self.ssl_truststore_type,
            keystore_location=self.ssl_keystore_location,
            keystore_type=self.ssl_keystore_type,
            key_password=_secret(self.ssl_key_password),
            endpoint_identification_algorithm=self.ssl_endpoint_identification_algorithm,
        )

    @property
    def bootstrap_servers(self) -> str:
        """``bootstrap.servers`` (set wherever this backend is the one in use)."""
        assert self.servers is not None, "bootstrap.servers: missing"
        return self.servers

    @property
    def security(self) -> KafkaClientSecurity:
        """How kts logs in to the brokers (derived at load from the ``admin.*`` keys)."""
        return self._security
