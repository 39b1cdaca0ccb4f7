"""Settings of the Kafka-protocol backend: which backend the keys choose, and the admin.* login keys refused
with one line naming the key (and never quoting the JAAS entry, which holds a password)."""

from __future__ import annotations

from typing import Any

import pytest

from app.backends import load_settings
from app.settings import ConfigError
from app.storage.kafka.settings import KafkaSettings

SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kts" password="p4ss";'
BASE: dict[str, Any] = {"delegation_token_secret_key": "s", "bootstrap_servers": "b1:9093,b2:9093"}


def test_zookeeper_connect_wins_and_bootstrap_servers_alone_means_the_protocol() -> None:
    assert load_settings(**BASE, zookeeper_connect="zk:2181").backend == "zookeeper"
    kafka = load_settings(
        **BASE, admin_security_protocol="SASL_SSL", admin_sasl_mechanism="SCRAM-SHA-512", admin_sasl_jaas_config=SCRAM
    )
    assert kafka.backend == "kafka" and kafka.group(KafkaSettings).bootstrap_servers == "b1:9093,b2:9093"
    assert (
        kafka.group(KafkaSettings).security.login is not None
        and kafka.group(KafkaSettings).security.login.username == "kts"
    )
    assert "p4ss" not in repr(kafka.group(KafkaSettings).security)


def test_neither_cluster_key_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^zookeeper.connect: missing .*bootstrap.servers"):
        load_settings(delegation_token_secret_key="s")


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"bootstrap_servers": "b1"}, "bootstrap.servers"),
        ({"bootstrap_servers": "b1:99999"}, "bootstrap.servers"),
        ({"admin_security_protocol": "SASL_TLS"}, "admin.security.protocol"),
        (
            {"admin_security_protocol": "SASL_SSL", "admin_sasl_mechanism": "GSSAPI", "admin_sasl_jaas_config": SCRAM},
            "admin.sasl.mechanism",
        ),
        ({"admin_security_protocol": "SASL_SSL", "admin_sasl_mechanism": "SCRAM-SHA-512"}, "admin.sasl.jaas.config"),
        (
            {"admin_security_protocol": "SASL_SSL", "admin_sasl_mechanism": "PLAIN", "admin_sasl_jaas_config": SCRAM},
            "admin.sasl.jaas.config",
        ),
        (
            {
                "admin_security_protocol": "SASL_SSL",
                "admin_sasl_mechanism": "SCRAM-SHA-512",
                "admin_sasl_jaas_config": SCRAM.replace(";", ' tokenauth="true";'),
            },
            "admin.sasl.jaas.config",
        ),
        (
            {
                "admin_security_protocol": "SASL_SSL",
                "admin_sasl_mechanism": "SCRAM-SHA-512",
                "admin_sasl_jaas_config": "not jaas \\",
            },
            "admin.sasl.jaas.config",
        ),
        ({"admin_security_protocol": "SSL", "admin_ssl_truststore_type": "JKS"}, "admin.ssl.truststore.type"),
        (
            {"admin_security_protocol": "SSL", "admin_ssl_truststore_location": "/nonexistent.pem"},
            "admin.ssl.truststore.location",
        ),
        ({"admin_sasl_jaas_config": SCRAM}, "admin.sasl.jaas.config"),
        ({"admin_request_timeout_ms": 10}, "admin.request.timeout.ms"),
        ({"cluster_cache_refresh_ms": 0}, "cluster.cache.refresh.ms"),
    ],
)
def test_bad_kafka_settings_are_one_line_naming_the_key(overrides: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(**(BASE | overrides))
    message = str(refused.value)
    assert message.startswith(f"{key}:") and "\n" not in message
    assert "p4ss" not in message
