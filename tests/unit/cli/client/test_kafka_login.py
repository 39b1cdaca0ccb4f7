"""The token login's SCRAM messages, and the fence around what app/cli/client/kafka_login.py takes from kafka-python:
if an upgrade moves or changes these parts, these tests say so plainly instead of every broker login failing.
(The exchange with real brokers: tests/e2e/kafka/.)"""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect

import kafka
import pytest
from kafka.net import sasl
from kafka.net.sasl.abc import SaslMechanism
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from app.cli.client.kafka_login import (
    BrokerLogin,
    Credentials,
    ScramTokenMechanism,
    mechanism_for,
    split_server,
)

CHANGED = f"kafka-python {kafka.__version__} changed what app/cli/client/kafka_login.py relies on"

# RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil".
CLIENT_NONCE = b"rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _with_nonce(mechanism: SaslMechanism) -> SaslMechanism:
    mechanism._client.nonce = CLIENT_NONCE  # the one random input, fixed to the RFC's
    return mechanism


def test_kafka_pythons_parts_are_where_the_adapter_takes_them() -> None:
    assert callable(sasl.register_sasl_mechanism), CHANGED
    abstract = {name for name, member in vars(SaslMechanism).items() if getattr(member, "__isabstractmethod__", False)}
    assert abstract == {"__init__", "auth_bytes", "receive", "is_done", "is_authenticated"}, CHANGED
    assert list(inspect.signature(ScramClient).parameters) == ["user", "password", "mechanism"], CHANGED
    for method in ("first_message", "process_server_first_message", "final_message", "process_server_final_message"):
        assert callable(getattr(ScramClient, method, None)), CHANGED
    client = ScramClient("u", "p", "SCRAM-SHA-512")
    assert (client.user, client.auth_message, type(client.nonce)) == (b"u", b"", bytes), CHANGED
    protocol = KafkaProtocol(client_id="kts")
    protocol.send_request(SaslHandshakeRequest[1](mechanism="PLAIN"))
    framed = protocol.send_bytes()
    assert framed[:4] == (len(framed) - 4).to_bytes(4, "big") and framed[4:8] == b"\x00\x11\x00\x01", CHANGED
    assert SaslAuthenticateRequest[1](auth_bytes=b"x").API_KEY == 36, CHANGED


def test_a_password_login_is_rfc_7677s_exchange() -> None:
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", Credentials("user", "pencil")))
    assert mechanism.auth_bytes() == b"n,,n=user,r=" + CLIENT_NONCE
    mechanism.receive(SERVER_FIRST)
    assert mechanism.auth_bytes() == CLIENT_FINAL
    assert mechanism.receive(SERVER_FINAL) is True
    assert mechanism.is_authenticated()


def test_a_token_login_sends_tokenauth_and_signs_it() -> None:
    """Kafka's ScramSaslServer reads the extension from the client-first message and checks a proof over an
    AuthMessage that holds it: the proof below is RFC 5802's arithmetic with the extension in the bare message."""
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", Credentials("user", "pencil", token=True)))
    assert isinstance(mechanism, ScramTokenMechanism)
    assert mechanism.auth_bytes() == b"n,,n=user,r=" + CLIENT_NONCE + b",tokenauth=true"
    mechanism.receive(SERVER_FIRST)
    final = mechanism.auth_bytes()

    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_nonce = SERVER_FIRST.split(b",")[0][2:]
    auth_message = b"n=user,r=" + CLIENT_NONCE + b",tokenauth=true," + SERVER_FIRST + b",c=biws,r=" + server_nonce
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    assert final == b"c=biws,r=" + server_nonce + b",p=" + base64.b64encode(proof)

    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    server_final = b"v=" + base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest())
    assert mechanism.receive(server_final) is True


def test_a_wrong_server_signature_is_an_error() -> None:
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", Credentials("user", "pencil")))
    mechanism.auth_bytes()
    mechanism.receive(SERVER_FIRST)
    mechanism.auth_bytes()
    with pytest.raises(ValueError, match="wrong signature"):
        mechanism.receive(b"v=" + base64.b64encode(b"\x00" * 32))


def test_a_token_logs_in_with_scram_only() -> None:
    with pytest.raises(ValueError, match="SCRAM-SHA-256 or SCRAM-SHA-512, not PLAIN"):
        mechanism_for("PLAIN", Credentials("token-id", "hmac", token=True))


def test_credentials_never_show_the_password() -> None:
    assert "pencil" not in repr(Credentials("user", "pencil"))


@pytest.mark.parametrize(
    ("server", "parts"),
    [("broker-1:9092", ("broker-1", 9092)), (" 10.0.0.1:9093", ("10.0.0.1", 9093)), ("[::1]:9092", ("::1", 9092))],
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
