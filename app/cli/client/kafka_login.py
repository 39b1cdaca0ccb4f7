"""Log in to a Kafka broker as a Kafka client would, with a delegation token or a user's password.

A client logs in with a token by SCRAM with the ``tokenauth=true`` extension in its client-first message
(``n,,n=<tokenId>,r=<nonce>,tokenauth=true``, docs/kafka-compatibility.md). The login itself (the SaslHandshake and
SaslAuthenticate requests, the SCRAM messages with that extension, what counts as a refusal) is the Kafka backend's
SASL conversation (``app/storage/kafka/sasl.py``), which also checks HTTP callers' passwords; this module drives it
over one blocking connection, so a refusal comes back at once with the broker's own message instead of a client's
retries. Nothing here registers a SASL mechanism with kafka-python (that registry is process-wide: see sasl.py).

Of kafka-python this module uses ``kafka.protocol.parser.KafkaProtocol`` (framing) and ``kafka.errors``
(kafka-python is bounded in pyproject.toml; tests/unit/cli/client/test_kafka_login.py checks the framing).
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Final

from kafka.errors import KafkaError
from kafka.protocol.parser import KafkaProtocol

from app.storage.kafka.sasl import MECHANISMS, LoginRefused, converse, mechanism_for, sasl_login

SECURITY_PROTOCOLS: Final = ("SASL_PLAINTEXT", "SASL_SSL")


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
    mechanism = mechanism_for(mechanism_name, credentials.username, credentials.password, token=credentials.token)
    try:
        converse(sasl_login(mechanism_name, mechanism), connection.request)
    except LoginRefused as exc:
        raise LoginError(f"{server} {exc}", refused=True) from None


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
