"""Log in to a Kafka broker as a Kafka client would, with a delegation token or a user's password.

A client logs in with a token by SCRAM with the ``tokenauth=true`` extension in its client-first message
(``n,,n=<tokenId>,r=<nonce>,tokenauth=true``, docs/kafka-compatibility.md); no Python Kafka client sends it
out of the box. kafka-python has the SCRAM arithmetic and the protocol messages, and takes SASL mechanisms
as plug-ins (``kafka.net.sasl.SaslMechanism``); ``ScramTokenMechanism`` is such a plug-in, and ``login``
drives it (or kafka-python's PLAIN and SCRAM mechanisms) through SaslHandshake and SaslAuthenticate on one
connection, so a refusal comes back at once with the broker's own message instead of a client's retries.

This module is the only one that touches kafka-python, and uses these parts of it (kafka-python is bounded
in pyproject.toml; tests/unit/cli/client/test_kafka_login.py checks they are still there):
``kafka.net.sasl`` (``SaslMechanism``, ``SaslMechanismPlain``, ``scram.ScramClient``, ``register_sasl_mechanism``),
``kafka.protocol.parser.KafkaProtocol`` (framing) and ``kafka.protocol.sasl`` (the two messages).
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Final

from kafka.errors import KafkaError
from kafka.net.sasl.abc import SaslMechanism
from kafka.net.sasl.plain import SaslMechanismPlain
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

SCRAM_MECHANISMS: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISMS: Final = ("PLAIN", *SCRAM_MECHANISMS)
SECURITY_PROTOCOLS: Final = ("SASL_PLAINTEXT", "SASL_SSL")
TOKEN_EXTENSION: Final = b",tokenauth=true"
_HANDSHAKE_VERSION: Final = 1  # v1: the exchange then goes in SaslAuthenticate requests (Kafka 1.0+)
_AUTHENTICATE_VERSION: Final = 1  # v1 adds the session lifetime (Kafka 2.2+); 4.x still serves 0-2


class LoginError(Exception):
    """A login did not succeed. ``refused``: the broker answered no (wrong credentials, unknown token, a
    mechanism it does not offer); else it could not be reached or spoke no Kafka."""

    def __init__(self, message: str, *, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class Credentials:
    """A user name and password, or a delegation token's id and (standard base64) HMAC."""

    username: str
    password: str = field(repr=False)
    token: bool = False


@dataclass(frozen=True)
class BrokerLogin:
    """Where and how to log in: the client keys ``bootstrap.servers``, ``security.protocol``, ``sasl.mechanism``,
    and for ``SASL_SSL`` the TLS context the ``ssl.*`` keys describe (None: the system's CAs)."""

    bootstrap_servers: tuple[str, ...]
    security_protocol: str = "SASL_SSL"
    sasl_mechanism: str = "SCRAM-SHA-512"
    ssl_context: ssl.SSLContext | None = None

    def __post_init__(self) -> None:
        if not self.bootstrap_servers:
            raise ValueError("no bootstrap server")
        for server in self.bootstrap_servers:
            split_server(server)
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.sasl_mechanism not in MECHANISMS:
            raise ValueError(f"sasl.mechanism must be one of {', '.join(MECHANISMS)}")


def split_server(server: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) into its parts; ValueError names the bad entry."""
    host, sep, port = server.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"not host:port: {server!r}")
    return host, int(port)


class _TokenScramClient(ScramClient):  # type: ignore[misc]
    """kafka-python's SCRAM client with the ``tokenauth=true`` extension after the nonce. The extension is part
    of client-first-message-bare, so it also goes into the AuthMessage both sides sign (RFC 5802 section 3)."""

    def first_message(self) -> bytes:
        bare: bytes = b"n=" + self.user + b",r=" + self.nonce + TOKEN_EXTENSION
        self.auth_message += bare
        return b"n,," + bare


class ScramTokenMechanism(SaslMechanism):  # type: ignore[misc]
    """SCRAM-SHA-256/512 as a kafka-python SASL mechanism, logging in with a delegation token
    (``sasl_plain_username`` the token id, ``sasl_plain_password`` the HMAC). Registered under a SCRAM name
    with ``kafka.net.sasl.register_sasl_mechanism(name, ScramTokenMechanism, overwrite=True)``, it makes every
    kafka-python client of the process log in with tokens."""

    def __init__(self, **config: Any) -> None:
        mechanism = config.get("sasl_mechanism")
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"a token logs in with {' or '.join(SCRAM_MECHANISMS)}, not {mechanism}")
        self.username = config["sasl_plain_username"]
        self.mechanism = mechanism
        self._client = _TokenScramClient(config["sasl_plain_username"], config["sasl_plain_password"], mechanism)
        self._state = 0

    def auth_bytes(self) -> bytes:
        if self._state == 0:
            message: bytes = self._client.first_message()
        elif self._state == 1:
            message = self._client.final_message()
        else:
            raise ValueError("the SCRAM exchange is over")
        return message

    def receive(self, auth_bytes: bytes) -> bool:
        if self._state == 0:
            self._client.process_server_first_message(auth_bytes)
        elif self._state == 1:
            self._client.process_server_final_message(auth_bytes)  # raises when the server's proof is wrong
        self._state += 1
        return self.is_done()

    def is_done(self) -> bool:
        return self._state == 2

    def is_authenticated(self) -> bool:
        return self._state == 2

    def auth_details(self) -> str:
        return f"Authenticated with delegation token {self.username} via SASL / {self.mechanism}"


class _ScramMechanism(ScramTokenMechanism):
    """The same exchange without the extension: a user logging in with a password."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self._client = ScramClient(config["sasl_plain_username"], config["sasl_plain_password"], self.mechanism)


def mechanism_for(mechanism: str, credentials: Credentials) -> SaslMechanism:
    config = {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": credentials.username,
        "sasl_plain_password": credentials.password,
    }
    if credentials.token:
        return ScramTokenMechanism(**config)
    if mechanism == "PLAIN":
        return SaslMechanismPlain(**config)
    return _ScramMechanism(**config)


def login(target: BrokerLogin, credentials: Credentials, *, timeout_s: float = 10.0) -> None:
    """Log in to the first bootstrap server that answers; LoginError when none accepts. A refusal from a
    broker ends the attempt (the others share its view of credentials); an unreachable one is skipped."""
    unreachable: list[str] = []
    for server in target.bootstrap_servers:
        try:
            _login_once(server, target, credentials, timeout_s)
            return
        except (OSError, EOFError) as exc:
            unreachable.append(f"{server}: {_reason(exc)}")
        except KafkaError as exc:  # an answer that is not Kafka's protocol (another service on that port?)
            unreachable.append(f"{server}: not a Kafka answer ({exc})")
    raise LoginError("; ".join(unreachable), refused=False)


def _login_once(server: str, target: BrokerLogin, credentials: Credentials, timeout_s: float) -> None:
    host, port = split_server(server)
    deadline = time.monotonic() + timeout_s
    with socket.create_connection((host, port), timeout=timeout_s) as raw:
        sock: socket.socket = raw
        if target.security_protocol == "SASL_SSL":
            context = target.ssl_context or ssl.create_default_context()
            sock = context.wrap_socket(raw, server_hostname=host)
        try:
            _exchange(_Connection(sock, deadline), target.sasl_mechanism, credentials, server)
        finally:
            if sock is not raw:
                sock.close()


def _exchange(connection: _Connection, mechanism_name: str, credentials: Credentials, server: str) -> None:
    handshake = connection.request(SaslHandshakeRequest[_HANDSHAKE_VERSION](mechanism=mechanism_name))
    if handshake.error_code != 0 or mechanism_name not in handshake.mechanisms:
        offered = ", ".join(handshake.mechanisms or ()) or "none"
        raise LoginError(f"{server} does not offer SASL {mechanism_name} (it offers {offered})", refused=True)
    mechanism = mechanism_for(mechanism_name, credentials)
    while not mechanism.is_done():
        answer = connection.request(SaslAuthenticateRequest[_AUTHENTICATE_VERSION](auth_bytes=mechanism.auth_bytes()))
        if answer.error_code != 0:
            raise LoginError(f"{server} refused the login: {answer.error_message}", refused=True)
        try:
            mechanism.receive(answer.auth_bytes)
        except ValueError as exc:  # a wrong server signature: not the broker holding these credentials
            raise LoginError(f"{server} failed the SCRAM exchange: {exc}", refused=True) from exc


class _Connection:
    """Requests and their answers, one at a time, on a connected socket."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._protocol = KafkaProtocol(client_id="kts")

    def request(self, message: Any) -> Any:
        self._protocol.send_request(message)
        self._sock.sendall(self._protocol.send_bytes())
        while True:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer in time")
            self._sock.settimeout(remaining)
            data = self._sock.recv(65536)
            if not data:
                raise EOFError("the broker closed the connection")
            responses = self._protocol.receive_bytes(data)
            if responses:
                return responses[0][1]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: {exc.verify_message}"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
