"""The SASL login both transports drive (app/storage/kafka/sasl.py): the SCRAM messages (RFC 7677's vector, the
token extension, saslname escaping), the conversation's turns against scripted broker answers built from kafka-python's
own response classes, and the fence around what it takes from kafka-python. That kts never touches kafka-python's
process-wide mechanism registry is checked here too; the exchange with real brokers is in tests/e2e/kafka/."""

from __future__ import annotations

import ast
import base64
import hashlib
import hmac
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kafka
import kafka.errors as kafka_errors
import pytest
from kafka.net import sasl as kafka_sasl
from kafka.net.sasl.abc import SaslMechanism
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from app.domain.errors import StoreUnavailable
from app.domain.jaas import SCRAM_LOGIN_MODULE
from app.storage.kafka.client_config import kafka_client_security
from app.storage.kafka.sasl import (
    LoginRefused,
    ScramPasswordMechanism,
    ScramTokenMechanism,
    converse,
    mechanism_for,
    sasl_login,
    saslname,
)
from app.storage.kafka.wire import KafkaWire

CHANGED = f"kafka-python {kafka.__version__} changed what app/storage/kafka/sasl.py relies on"
APP = Path(__file__).resolve().parents[4] / "app"

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


def test_kafka_pythons_parts_are_where_sasl_py_takes_them() -> None:
    abstract = {name for name, member in vars(SaslMechanism).items() if getattr(member, "__isabstractmethod__", False)}
    assert abstract == {"__init__", "auth_bytes", "receive", "is_done", "is_authenticated"}, CHANGED
    assert list(inspect.signature(ScramClient).parameters) == ["user", "password", "mechanism"], CHANGED
    for method in ("first_message", "process_server_first_message", "final_message", "process_server_final_message"):
        assert callable(getattr(ScramClient, method, None)), CHANGED
    client = ScramClient("u", "p", "SCRAM-SHA-512")
    assert (client.user, client.auth_message, type(client.nonce)) == (b"u", b"", bytes), CHANGED
    assert SaslHandshakeRequest[1](mechanism="PLAIN").API_KEY == 17, CHANGED
    assert SaslAuthenticateRequest[1](auth_bytes=b"x").API_KEY == 36, CHANGED
    # wire.py checks the registry before kts logs in (the registry is process-wide: see sasl.py)
    assert callable(kafka_sasl.get_sasl_mechanism) and isinstance(kafka_sasl.SASL_MECHANISMS, dict), CHANGED


# -------------------- the SCRAM messages


def test_a_password_login_is_rfc_7677s_exchange() -> None:
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", "user", "pencil"))
    assert isinstance(mechanism, ScramPasswordMechanism)
    assert mechanism.auth_bytes() == b"n,,n=user,r=" + CLIENT_NONCE
    mechanism.receive(SERVER_FIRST)
    assert mechanism.auth_bytes() == CLIENT_FINAL
    assert mechanism.receive(SERVER_FINAL) is True
    assert mechanism.is_authenticated()


def test_a_token_login_sends_tokenauth_and_signs_it() -> None:
    """Kafka's ScramSaslServer reads the extension from the client-first message and checks a proof over an
    AuthMessage that holds it: the proof below is RFC 5802's arithmetic with the extension in the bare message."""
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", "user", "pencil", token=True))
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


@pytest.mark.parametrize("token", [False, True])
def test_a_user_name_is_escaped_as_a_saslname(token: bool) -> None:
    """RFC 5802: "=" and "," in a name are =3D and =2C (Kafka's ScramFormatter unescapes them); both logins escape."""
    assert saslname("CN=a,O=b") == "CN=3Da=2CO=3Db"
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-512", "CN=a,O=b", "pw", token=token))
    assert mechanism.auth_bytes().startswith(b"n,,n=CN=3Da=2CO=3Db,r=" + CLIENT_NONCE)


def test_a_wrong_server_signature_is_an_error() -> None:
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", "user", "pencil"))
    mechanism.auth_bytes()
    mechanism.receive(SERVER_FIRST)
    mechanism.auth_bytes()
    with pytest.raises(ValueError, match="wrong signature"):
        mechanism.receive(b"v=" + base64.b64encode(b"\x00" * 32))


def test_a_token_logs_in_with_scram_only() -> None:
    with pytest.raises(ValueError, match="a token logs in with SCRAM-SHA-256 or SCRAM-SHA-512, not PLAIN"):
        mechanism_for("PLAIN", "token-id", "hmac", token=True)


# -------------------- the conversation, against scripted answers


def handshake(*mechanisms: str, error_code: int = 0) -> Any:
    return SaslHandshakeResponse[1](error_code=error_code, mechanisms=list(mechanisms))


def authenticate(auth_bytes: bytes = b"", error_code: int = 0, error_message: str | None = None) -> Any:
    return SaslAuthenticateResponse[1](
        error_code=error_code, error_message=error_message, auth_bytes=auth_bytes, session_lifetime_ms=0
    )


def broker(*answers: Any) -> tuple[Callable[[Any], Any], list[Any]]:
    """A transport answering each request with the next of ``answers`` (an exception is raised instead)."""
    script: Iterator[Any] = iter(answers)
    sent: list[Any] = []

    def send(request: Any) -> Any:
        sent.append(request)
        answer = next(script)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return send, sent


def test_the_conversation_logs_in_with_rfc_7677s_exchange() -> None:
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", "user", "pencil"))
    send, sent = broker(handshake("PLAIN", "SCRAM-SHA-256"), authenticate(SERVER_FIRST), authenticate(SERVER_FINAL))
    converse(sasl_login("SCRAM-SHA-256", mechanism), send)
    assert [(type(request).__name__, request.API_VERSION) for request in sent] == [
        ("SaslHandshakeRequest", 1),
        ("SaslAuthenticateRequest", 1),
        ("SaslAuthenticateRequest", 1),
    ]
    assert sent[0].mechanism == "SCRAM-SHA-256"
    assert [request.auth_bytes for request in sent[1:]] == [b"n,,n=user,r=" + CLIENT_NONCE, CLIENT_FINAL]


def test_plain_logs_in_in_one_turn() -> None:
    send, sent = broker(handshake("PLAIN"), authenticate(b""))
    converse(sasl_login("PLAIN", mechanism_for("PLAIN", "alice", "pw")), send)
    assert sent[1].auth_bytes == b"alice\x00alice\x00pw"


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ((handshake("PLAIN"),), "does not offer SASL SCRAM-SHA-256 (it offers PLAIN)"),
        ((handshake(error_code=33),), "does not offer SASL SCRAM-SHA-256 (it offers none)"),
        (
            (handshake("SCRAM-SHA-256"), authenticate(error_code=58, error_message="Authentication failed")),
            "refused the login: Authentication failed",
        ),
        (
            (handshake("SCRAM-SHA-256"), authenticate(SERVER_FIRST), kafka_errors.KafkaConnectionError("closed")),
            "closed the connection during the login",
        ),
        ((handshake("SCRAM-SHA-256"), EOFError("closed")), "closed the connection during the login"),
        ((handshake("SCRAM-SHA-256"), authenticate(b"r=another-nonce,s=AA==,i=4096")), "failed the SCRAM exchange"),
        ((handshake("SCRAM-SHA-256"), authenticate(b"s=AA==,i=4096")), "failed the SCRAM exchange"),
        (
            (handshake("SCRAM-SHA-256"), authenticate(SERVER_FIRST), authenticate(b"e=other-error")),
            "failed the SCRAM exchange",
        ),
    ],
)
def test_a_refusal_says_why_in_the_brokers_words(answers: tuple[Any, ...], reason: str) -> None:
    send, _ = broker(*answers)
    mechanism = _with_nonce(mechanism_for("SCRAM-SHA-256", "user", "pencil"))
    with pytest.raises(LoginRefused, match=re.escape(reason)) as refused:
        converse(sasl_login("SCRAM-SHA-256", mechanism), send)
    assert "pencil" not in str(refused.value)


def test_plain_answered_with_bytes_is_not_a_login() -> None:
    send, _ = broker(handshake("PLAIN"), authenticate(b"unexpected"))
    with pytest.raises(LoginRefused, match="did not accept the SASL PLAIN login"):
        converse(sasl_login("PLAIN", mechanism_for("PLAIN", "alice", "pw")), send)


@pytest.mark.parametrize("lost", [kafka_errors.KafkaConnectionError("reset"), EOFError("closed"), TimeoutError()])
def test_a_connection_lost_before_the_handshake_answer_is_not_a_refusal(lost: BaseException) -> None:
    """The broker was not reached (or never took the mechanism): the transport's error comes back out, so the
    caller says unreachable, not refused."""
    send, _ = broker(lost)
    with pytest.raises(type(lost)):
        converse(sasl_login("SCRAM-SHA-512", mechanism_for("SCRAM-SHA-512", "u", "p")), send)


def test_a_timeout_during_the_exchange_is_not_a_refusal() -> None:
    send, _ = broker(handshake("SCRAM-SHA-512"), TimeoutError())
    with pytest.raises(TimeoutError):
        converse(sasl_login("SCRAM-SHA-512", mechanism_for("SCRAM-SHA-512", "u", "p")), send)


# -------------------- kafka-python's registry is process-wide: kts never writes it


def test_no_module_of_app_registers_a_sasl_mechanism() -> None:
    """``register_sasl_mechanism`` changes every kafka-python login of the process (sasl.py's docstring)."""
    found = sorted(
        f"{path.relative_to(APP.parent)}:{node.lineno}"
        for path in APP.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Name) and node.id == "register_sasl_mechanism")
        or (isinstance(node, ast.Attribute) and node.attr == "register_sasl_mechanism")
        or (isinstance(node, ast.alias) and node.name == "register_sasl_mechanism")
    )
    assert found == []


def test_importing_kts_leaves_kafka_pythons_mechanisms_as_shipped() -> None:
    import app.cli.client.kafka_login
    import app.cli.main
    import app.runtime
    import app.storage.kafka.wire  # noqa: F401

    assert {name: cls.__module__.split(".")[:3] for name, cls in kafka_sasl.SASL_MECHANISMS.items()} == {
        name: ["kafka", "net", "sasl"] for name in kafka_sasl.SASL_MECHANISMS
    }
    assert kafka_sasl.get_sasl_mechanism("SCRAM-SHA-512").__name__ == "SaslMechanismScram"


def test_kts_refuses_to_start_where_its_mechanism_was_replaced() -> None:
    """A token mechanism registered under SCRAM-SHA-512 by someone else in the process would send kts's password as
    an HMAC: the start stops before any connection, with one line naming what replaced kafka-python's class.
    (kafka-python's own class goes back before the test ends: the conftest fails a test that leaves it replaced;
    the real-broker proof: tests/e2e/kafka/.)"""
    shipped = kafka_sasl.SASL_MECHANISMS["SCRAM-SHA-512"]
    kafka_sasl.SASL_MECHANISMS["SCRAM-SHA-512"] = ScramTokenMechanism
    try:
        security = kafka_client_security(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_jaas_config=f'{SCRAM_LOGIN_MODULE} required username="kts" password="kts-pw";',
        )
        wire = KafkaWire("127.0.0.1:9", security)
        with pytest.raises(StoreUnavailable) as refused:
            wire.start()
    finally:
        kafka_sasl.SASL_MECHANISMS["SCRAM-SHA-512"] = shipped
    message = str(refused.value)
    assert "SCRAM-SHA-512 was replaced in this process by app.storage.kafka.sasl.ScramTokenMechanism" in message
    assert "SCRAM-SHA-512 user 'kts'" in message and "kts-pw" not in message
    assert "\n" not in message
