"""The fence around what app/cli/client/kafka_login.py takes from kafka-python itself (the framing of its one
blocking connection) and the login target's checks. The SASL conversation it drives, SCRAM with tokens included, is
tested in tests/unit/storage/kafka/test_sasl.py; the exchange with real brokers in tests/e2e/kafka/."""

from __future__ import annotations

import kafka
import pytest
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from app.cli.client.kafka_login import BrokerLogin, Credentials, split_server

CHANGED = f"kafka-python {kafka.__version__} changed what app/cli/client/kafka_login.py relies on"


def test_kafka_pythons_framing_is_what_the_blocking_connection_sends() -> None:
    protocol = KafkaProtocol(client_id="kts")
    protocol.send_request(SaslHandshakeRequest[1](mechanism="PLAIN"))
    framed = protocol.send_bytes()
    assert framed[:4] == (len(framed) - 4).to_bytes(4, "big") and framed[4:8] == b"\x00\x11\x00\x01", CHANGED
    assert SaslAuthenticateRequest[1](auth_bytes=b"x").API_KEY == 36, CHANGED


def test_credentials_never_show_the_password() -> None:
    assert "pencil" not in repr(Credentials("user", "pencil"))


@pytest.mark.parametrize(
    ("server", "parts"),
    [("broker-1:9092", ("broker-1", 9092)), (" 192.0.2.1:9093", ("192.0.2.1", 9093)), ("[::1]:9092", ("::1", 9092))],
)
def test_bootstrap_servers_are_host_and_port(server: str, parts: tuple[str, int]) -> None:
    assert split_server(server) == parts


@pytest.mark.parametrize("server", ["broker-1", "broker-1:", ":9092", "broker-1:http", "broker-1:70000"])
def test_a_bad_bootstrap_server_is_named(server: str) -> None:
    with pytest.raises(ValueError, match="not host:port"):
        split_server(server)


def test_a_login_target_refuses_unknown_protocols_and_mechanisms() -> None:
    with pytest.raises(ValueError, match=r"security\.protocol"):
        BrokerLogin(("b:1",), "PLAINTEXT")
    with pytest.raises(ValueError, match=r"sasl\.mechanism"):
        BrokerLogin(("b:1",), "SASL_SSL", "GSSAPI")
    with pytest.raises(ValueError, match="no bootstrap server"):
        BrokerLogin(())
