"""kts's connection to the brokers: kafka-python's networking (connections, SASL, TLS, ApiVersions, metadata)
carrying kafka-python's own messages (ACLs, SCRAM credentials) and kio's (the four delegation-token messages,
which kafka-python lacks).

This module is the fence around both libraries' private parts, and the only place that touches them:

- kafka-python 3.0.x: ``NetworkSelector`` and ``KafkaConnectionManager`` (what ``KafkaAdminClient`` builds,
  used directly so that a failed bootstrap still leaves a loop to diagnose it with), ``KafkaConnection`` and
  the manager's ``_build_transport`` (a connection that logs in as a caller, for a password check, without
  touching the manager's connections or its record of failed logins), and the duck type its protocol
  parser expects of a request (``API_KEY``, ``API_VERSION``, ``with_header``, ``encode``, ``expect_response``,
  ``header.get_response_class()``) and of a response class (``parse_header``, ``decode``).
- kio 0.6.x: ``entity_writer``/``entity_reader`` and each message's ``__header_schema__``; kio refuses the
  -1 timestamps Kafka puts in a token answer that carries an error, so such answers are read for their
  error code alone (every token answer starts with it).

``tests/unit/storage/kafka/test_wire_fence.py`` fails with a clear message when either library changes these.
"""

from __future__ import annotations

import io
import logging
import random
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import kafka.errors as kafka_errors
from kafka.net.connection import KafkaConnection
from kafka.net.manager import KafkaConnectionManager
from kafka.net.sasl import get_sasl_mechanism
from kafka.net.selector import NetworkSelector
from kafka.protocol.metadata import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_int16
from kio.static.primitive import i16, i32

from app.domain.errors import StoreUnavailable
from app.storage.kafka import client_logging
from app.storage.kafka.client_config import KafkaClientSecurity
from app.storage.kafka.sasl import LoginRefused, converse_async, mechanism_for, sasl_login

log = logging.getLogger(__name__)
Q = TypeVar("Q")
A = TypeVar("A")

# kafka.errors' classes for a broker that cannot be reached or answered too late (the outcome of a write unknown).
UNREACHABLE = (
    kafka_errors.KafkaConnectionError,
    kafka_errors.NodeNotReadyError,
    kafka_errors.KafkaTimeoutError,
    kafka_errors.RequestTimedOutError,
    kafka_errors.MetadataEmptyBrokerList,
    kafka_errors.TooManyInFlightRequests,
    kafka_errors.Cancelled,
    OSError,
)
LOGIN_REFUSED = (kafka_errors.SaslAuthenticationFailedError,)
CLIENT_ID = "kts"
# Requests in flight at once. kafka-python fails a request sent to a connection already at its limit (NodeNotReady,
# "paused") instead of queueing it, so callers beyond it wait here for a turn.
IN_FLIGHT = 32
_KAFKA_PYTHON_MECHANISMS = "kafka.net.sasl."  # where kafka-python's own SASL mechanism classes live


class KioMessage(Protocol):
    __api_key__: Any
    __version__: Any
    __header_schema__: Any


@dataclass(frozen=True, slots=True)
class Described:
    """The cluster as the brokers describe it: its id, its brokers (``id host:port``) and finalized features."""

    cluster_id: str | None
    brokers: tuple[str, ...]
    features: dict[str, int]


@dataclass(frozen=True, slots=True)
class TokenAnswer(Generic[A]):
    """A token RPC's answer: its error code, and the decoded message when the code is 0."""

    error_code: int
    message: A | None


class _KioResponseType(Generic[A]):
    """What kafka-python's parser calls on a response class, over a kio response type."""

    def __init__(self, response_type: type[A]) -> None:
        self._type = response_type

    def parse_header(self, buffer: Any) -> Any:
        data, offset = bytes(buffer), buffer.tell()
        header, size = entity_reader(self._type.__header_schema__)(data, offset)  # type: ignore[attr-defined]
        buffer.seek(offset + size)
        return header

    def decode(self, buffer: Any) -> TokenAnswer[A]:
        data, offset = bytes(buffer), buffer.tell()
        error_code, _ = read_int16(data, offset)
        if error_code != ErrorCode.none:  # type: ignore[comparison-overlap]
            return TokenAnswer(int(error_code), None)
        message, _ = entity_reader(self._type)(data, offset)  # type: ignore[type-var]
        return TokenAnswer(0, message)


class _Header:
    def __init__(self, correlation_id: int, response_type: _KioResponseType[Any]) -> None:
        self.correlation_id = correlation_id
        self._response_type = response_type

    def get_response_class(self) -> _KioResponseType[Any]:
        return self._response_type


class KioRequest(Generic[Q, A]):
    """A kio request as kafka-python's connection sends it (the duck type of its ``ApiMessage``)."""

    def __init__(self, message: Q, response_type: type[A]) -> None:
        self._message = message
        self._response = _KioResponseType(response_type)
        self.API_KEY = int(message.__api_key__)  # type: ignore[attr-defined]
        self.API_VERSION = int(message.__version__)  # type: ignore[attr-defined]
        self.header: _Header | None = None
        self._client_id = CLIENT_ID

    def with_header(self, correlation_id: int = 0, client_id: str = CLIENT_ID) -> None:
        self.header = _Header(correlation_id, self._response)
        self._client_id = client_id

    def expect_response(self) -> bool:
        return True

    def encode(self, framed: bool = True, header: bool = True) -> bytes:
        assert self.header is not None
        out = io.BytesIO()
        if header:
            header_type = type(self._message).__header_schema__  # type: ignore[attr-defined]
            entity_writer(header_type)(
                out,
                header_type(
                    request_api_key=i16(self.API_KEY),
                    request_api_version=i16(self.API_VERSION),
                    correlation_id=i32(self.header.correlation_id),
                    client_id=self._client_id,
                ),
            )
        entity_writer(type(self._message))(out, self._message)  # type: ignore[type-var]
        body = out.getvalue()
        return struct.pack(">i", len(body)) + body if framed else body

    def __repr__(self) -> str:  # kafka-python logs requests at debug level: never their HMACs
        return f"KioRequest({type(self._message).__name__} v{self.API_VERSION})"


class KafkaWire:
    """One replica's connections to the cluster. Thread-safe: requests run on kafka-python's IO thread and
    callers block until their answer."""

    def __init__(
        self,
        bootstrap_servers: str,
        security: KafkaClientSecurity,
        *,
        request_timeout_ms: int = 30_000,
        on_outcome: Callable[[bool], None] | None = None,
    ) -> None:
        self._servers = bootstrap_servers.split(",")
        self._security = security
        self._timeout_ms = request_timeout_ms
        self._on_outcome = on_outcome
        self._net: NetworkSelector | None = None
        self._manager: KafkaConnectionManager | None = None
        self._lock = threading.Lock()
        self._turns = threading.BoundedSemaphore(IN_FLIGHT)
        self.connected = False  # the last request (or start) reached the brokers

    def _options(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self._servers,
            "client_id": CLIENT_ID,
            "request_timeout_ms": self._timeout_ms,
            "socket_connection_setup_timeout_ms": min(10_000, self._timeout_ms),
            "socket_connection_setup_timeout_max_ms": min(30_000, self._timeout_ms),
            "reconnect_backoff_max_ms": 1_000,
            "max_in_flight_requests_per_connection": 2 * IN_FLIGHT,  # never reached: see IN_FLIGHT
            **self._security.client_options(),
        }

    def start(self) -> None:
        """Connect and read the cluster's metadata; StoreUnavailable naming the cause when it cannot.

        One login of kts's own comes first (``_preflight``), so that a refused login ends the start at once: left to
        itself, kafka-python's bootstrap retries a refused login until ``admin.request.timeout.ms`` is over (27
        failed authentications in the broker's log in 33 s), which a broker-side lockout or alert would take for an
        attack. While no broker answers, the wait is logged as it goes."""
        self._check_own_mechanism()
        client_logging.install()
        with self._lock:
            if self._manager is not None:
                return
            net = NetworkSelector(**self._options())
            manager = KafkaConnectionManager(net, **self._options())
            net.start()
            self._net, self._manager = net, manager
        deadline = time.monotonic() + self._timeout_ms / 1000
        try:
            self._preflight(manager, deadline)
        except StoreUnavailable:
            self.stop()
            raise
        try:
            manager.bootstrap(max(1_000, int((deadline - time.monotonic()) * 1000)))
        except Exception as exc:
            cause = self._diagnose() or f"cannot reach the brokers at {','.join(self._servers)} ({type(exc).__name__})"
            self.stop()
            raise StoreUnavailable(cause) from None
        self._outcome(True)

    def _preflight(self, manager: KafkaConnectionManager, deadline: float) -> None:
        """Log in once as kts at a bootstrap broker, trying each in turn until one answers or ``deadline``:
        StoreUnavailable at the first refusal (one failed authentication), or naming every broker that did not
        answer in time. Without a login (PLAINTEXT, a TLS certificate) the same connection answers reachability."""
        login = self._security.login
        credentials = None if login is None else (login.mechanism, login.username, login.password)
        nodes = list(manager.cluster.bootstrap_brokers())
        unanswered: dict[str, str] = {}
        while True:
            for node in nodes:
                address = f"{node.host}:{node.port}"
                left = deadline - time.monotonic()
                if left <= 0:
                    causes = "; ".join(f"{where}: {why}" for where, why in unanswered.items())
                    raise StoreUnavailable(
                        f"cannot reach the brokers at {','.join(self._servers)} within admin.request.timeout.ms "
                        f"({self._timeout_ms} ms): {causes}"
                    )
                try:
                    refusal = manager.run(lambda node=node: self._exchange(node, credentials, deadline))
                except UNREACHABLE as exc:
                    unanswered[address] = _cause(exc)
                    log.info("waiting for %s … (%s; giving up in %.0f s)", address, unanswered[address], max(0, left))
                    continue
                if refusal is not None:
                    raise StoreUnavailable(
                        f"the brokers at {','.join(self._servers)} refused kts's login as {self._security.identity} "
                        f"({address} {refusal})"
                    )
                return
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def stop(self) -> None:
        with self._lock:
            manager, net = self._manager, self._net
            self._manager = self._net = None
        if manager is not None:
            manager.close()
        if net is not None:
            net.stop()

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The API keys the brokers answer, with their lowest and highest version."""
        manager = self._started()
        data = manager.broker_version_data
        return {} if data is None else dict(data.api_versions)

    def send(self, request: Any) -> Any:
        """Send a kafka-python message or a ``KioRequest`` to any broker and answer its response
        (StoreUnavailable when no broker answered in time: the outcome of a write is then unknown)."""
        manager = self._started()
        try:
            with self._turns:
                response = manager.run(lambda: manager.send(request))
        except LOGIN_REFUSED:
            self._outcome(False)
            raise StoreUnavailable(f"The brokers refused kts's login as {self._security.identity}.") from None
        except UNREACHABLE as exc:
            self._outcome(False)
            raise StoreUnavailable(
                f"The Kafka brokers are not reachable right now ({type(exc).__name__}); retry shortly."
            ) from None
        self._outcome(True)
        return response

    def describe(self) -> Described:
        """The cluster's id and brokers from kafka-python's metadata, and its finalized features (``metadata.version``
        on KRaft) from a fresh ApiVersions answer (v3, Kafka 2.4+; kafka-python keeps only the API versions)."""
        manager = self._started()
        answer = self.send(ApiVersionsRequest[3](client_software_name=CLIENT_ID, client_software_version="1"))
        features = {feature.name: int(feature.max_version_level) for feature in answer.finalized_features or ()}
        brokers = tuple(
            f"{broker.node_id} {broker.host}:{broker.port}"
            for broker in sorted(manager.cluster.brokers(), key=lambda broker: broker.node_id)
        )
        return Described(manager.cluster.cluster_id, brokers, features)

    def token_request(self, message: Q, response_type: type[A]) -> TokenAnswer[A]:
        answer: TokenAnswer[A] = self.send(KioRequest(message, response_type))
        return answer

    def login(self, mechanism: str, username: str, password: str) -> bool:
        """Whether a broker accepts this SCRAM login: a fresh connection that authenticates as ``username`` and
        is closed. StoreUnavailable when no broker could be asked (then nothing is known of the password)."""
        manager = self._started()
        brokers = list(manager.cluster.brokers()) or list(manager.cluster.bootstrap_brokers())
        node = random.choice(brokers)  # noqa: S311 - spreading logins over brokers, not a secret
        deadline = time.monotonic() + self._timeout_ms / 1000
        try:
            refusal = manager.run(lambda: self._exchange(node, (mechanism, username, password), deadline))
        except UNREACHABLE as exc:
            raise StoreUnavailable(
                f"No broker could check the password ({type(exc).__name__}); retry shortly."
            ) from None
        return refusal is None

    async def _exchange(self, node: Any, credentials: tuple[str, str, str] | None, timeout_at: float) -> str | None:
        """A client's login at ``node`` (sasl.py's conversation) as ``credentials`` (mechanism, user, password), or
        only ApiVersions when None: None when the broker accepted, else the broker's refusal. On a connection of its
        own rather than through kafka-python's ``initialize``, which can report a refused login as a lost
        connection: a broker answers a wrong proof or an unknown user by closing the connection, with or without an
        error answer first, so a connection lost once the broker has taken the mechanism is a refusal, and one lost
        before it is an unreachable broker (raised)."""
        manager = self._started()
        plain = self._security.client_options() | {"security_protocol": self._security.protocol.replace("SASL_", "")}
        connection = KafkaConnection(
            manager._net,
            node_id=node.node_id,
            broker_version_data=manager.broker_version_data,
            **(self._options() | plain),
        )
        client_logging.mark_login_check(connection)
        transport = await manager._build_transport(node, timeout_at=timeout_at)
        try:
            connection.connection_made(transport)
            await connection._get_api_versions(timeout_at)
            if credentials is None:
                return None
            mechanism, username, password = credentials
            login = sasl_login(mechanism, mechanism_for(mechanism, username, password))
            try:
                await converse_async(login, lambda request: connection._send_request(request, timeout_at=timeout_at))
            except LoginRefused as refused:
                return str(refused)
            return None
        finally:
            # Close the transport, not the connection: kafka-python counts a connection whose own initialisation
            # never ran as failed, and its close() aborts it with ERROR lines (every first login logged two).
            transport.close()

    def _check_own_mechanism(self) -> None:
        """kafka-python's connections log kts in with the class its process-wide registry holds for kts's
        mechanism (sasl.py's docstring): anything but kafka-python's own would log kts in as something else (a
        token mechanism registered under SCRAM-SHA-512 sends kts's password as an HMAC), and the brokers would
        refuse it for reasons no diagnosis could name. So refuse to start, naming what replaced it."""
        login = self._security.login
        if login is None:
            return
        try:
            registered = get_sasl_mechanism(login.mechanism)
        except KeyError:
            registered = None
        if registered is None or not registered.__module__.startswith(_KAFKA_PYTHON_MECHANISMS):
            replaced_by = "nothing" if registered is None else f"{registered.__module__}.{registered.__qualname__}"
            raise StoreUnavailable(
                f"kafka-python's SASL mechanism {login.mechanism} was replaced in this process by {replaced_by} "
                "(kafka.net.sasl.register_sasl_mechanism is process-wide), so kts could not log in to the brokers as "
                f"{self._security.identity}: do not register SASL mechanisms in a process that runs kts"
            )

    def _diagnose(self) -> str | None:
        """Why a bootstrap failed after the preflight's login succeeded, by logging in once more as kts: a refused
        login, else None (unreachable)."""
        manager = self._manager
        login = self._security.login
        if manager is None or login is None:
            return None
        node = manager.cluster.bootstrap_brokers()[0]
        deadline = time.monotonic() + self._timeout_ms / 1000
        try:
            refusal = manager.run(
                lambda: self._exchange(node, (login.mechanism, login.username, login.password), deadline)
            )
        except Exception:
            return None
        if refusal is not None:
            return f"the brokers at {','.join(self._servers)} refused kts's login as {self._security.identity}"
        return None

    def _started(self) -> KafkaConnectionManager:
        manager = self._manager
        if manager is None:
            raise StoreUnavailable("kts is not connected to the Kafka brokers.")
        return manager

    def _outcome(self, reached: bool) -> None:
        self.connected = reached
        if self._on_outcome is not None:
            self._on_outcome(reached)


def _cause(exc: BaseException) -> str:
    """A connection failure in a few words, led by its kind (kafka-python's errors already say theirs)."""
    text, kind = str(exc).strip(), type(exc).__name__
    return text if text.startswith(kind) else f"{kind}: {text}" if text else kind
