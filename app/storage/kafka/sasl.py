"""A Kafka client's SASL login (SaslHandshake, then SaslAuthenticate until the mechanism is done) as a conversation
that does no I/O: ``sasl_login`` yields each request and is sent the broker's answer. Two transports drive it, so
the exchange is written once:

- kts's connection to the brokers (``wire.py``): checking an HTTP caller's password by logging in as the caller;
- the client commands' login (``app/cli/client/kafka_login.py``, a blocking socket): the sidecar's check that a
  broker accepts a fresh token, the broker fixtures' readiness.

A login with a delegation token is SCRAM with the ``tokenauth=true`` extension in the client-first message
(``n,,n=<tokenId>,r=<nonce>,tokenauth=true``), which no Python Kafka client sends out of the box: kafka-python has
the SCRAM arithmetic (``ScramClient``) and takes SASL mechanisms as plug-ins (``SaslMechanism``), and
``ScramTokenMechanism`` is such a plug-in.

**kafka-python's mechanism registry is process-wide.** ``kafka.net.sasl.register_sasl_mechanism(name, cls)`` changes
the class every kafka-python connection of the process looks up by ``sasl_mechanism`` (kafka-python 3.0 resolves a
mechanism by name only, and takes no mechanism object per connection). Registering ``ScramTokenMechanism`` under
``SCRAM-SHA-512`` therefore turns every SCRAM-SHA-512 login of the process into a token login, kts's own login to
the brokers included. kts never registers: these mechanisms are handed to ``sasl_login`` directly, and
``wire.py`` refuses to start when something else in the process has replaced kafka-python's own. Register it
only in a process that is nothing but a token client (a workload of your own).

Parts of kafka-python used here (bounded in pyproject.toml; tests/unit/storage/kafka/test_sasl.py checks them):
``kafka.net.sasl`` (``SaslMechanism``, ``SaslMechanismPlain``, ``scram.ScramClient``), ``kafka.protocol.sasl``
(the two messages) and ``kafka.errors.KafkaConnectionError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final

import kafka.errors as kafka_errors
from kafka.net.sasl.abc import SaslMechanism
from kafka.net.sasl.plain import SaslMechanismPlain
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

SCRAM_MECHANISMS: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISMS: Final = ("PLAIN", *SCRAM_MECHANISMS)
TOKEN_EXTENSION: Final = b",tokenauth=true"
HANDSHAKE_VERSION: Final = 1  # v1: the exchange then goes in SaslAuthenticate requests (Kafka 1.0+)
AUTHENTICATE_VERSION: Final = 1  # v1 adds the session lifetime (Kafka 2.2+); 4.x still serves 0-2
# A connection the broker closed. Once the broker has taken the mechanism this is a refusal: a broker answers a
# wrong proof or an unknown user by closing the connection, with or without an error answer first.
CONNECTION_CLOSED: Final = (kafka_errors.KafkaConnectionError, EOFError, ConnectionResetError, BrokenPipeError)

# What the conversation yields and is sent: kafka-python's request and response messages.
SaslLogin = Generator[Any, Any, None]


class LoginRefused(Exception):
    """The broker did not accept the login; the message says why in the broker's words (never a password)."""


def saslname(username: str) -> str:
    """A user name as SCRAM carries it: ``=`` and ``,`` escaped (RFC 5802), which kafka-python's client leaves to its
    caller and Kafka's ``ScramFormatter.username`` reverses."""
    return username.replace("=", "=3D").replace(",", "=2C")


class _TokenScramClient(ScramClient):  # type: ignore[misc]
    """kafka-python's SCRAM client with the ``tokenauth=true`` extension after the nonce. The extension is part
    of client-first-message-bare, so it also goes into the AuthMessage both sides sign (RFC 5802 section 3)."""

    def first_message(self) -> bytes:
        bare: bytes = b"n=" + self.user + b",r=" + self.nonce + TOKEN_EXTENSION
        self.auth_message += bare
        return b"n,," + bare


class ScramTokenMechanism(SaslMechanism):  # type: ignore[misc]
    """SCRAM-SHA-256/512 as a kafka-python SASL mechanism, logging in with a delegation token
    (``sasl_plain_username`` the token id, ``sasl_plain_password`` the HMAC). The module docstring says why kts
    never registers it with ``register_sasl_mechanism``."""

    _client_class: type[ScramClient] = _TokenScramClient
    _who = "a token"

    def __init__(self, **config: Any) -> None:
        mechanism = config.get("sasl_mechanism")
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"{self._who} logs in with {' or '.join(SCRAM_MECHANISMS)}, not {mechanism}")
        self.username = config["sasl_plain_username"]
        self.mechanism = mechanism
        self._client = self._client_class(saslname(self.username), config["sasl_plain_password"], mechanism)
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


class ScramPasswordMechanism(ScramTokenMechanism):
    """The same exchange without the extension: a user logging in with a password."""

    _client_class = ScramClient
    _who = "a SCRAM password"

    def auth_details(self) -> str:
        return f"Authenticated as {self.username} via SASL / {self.mechanism}"


def mechanism_for(mechanism: str, username: str, password: str, *, token: bool = False) -> SaslMechanism:
    """The mechanism object of one login: SCRAM with a token, SCRAM or PLAIN with a password."""
    config = {"sasl_mechanism": mechanism, "sasl_plain_username": username, "sasl_plain_password": password}
    if token:
        return ScramTokenMechanism(**config)
    if mechanism == "PLAIN":
        return SaslMechanismPlain(**config)
    return ScramPasswordMechanism(**config)


def sasl_login(mechanism_name: str, mechanism: SaslMechanism) -> SaslLogin:
    """The login's requests, one at a time; send each one's answer back in. Ends when the broker accepted the login;
    raises LoginRefused when it did not. A transport that finds the connection closed throws that error in
    (``generator.throw``): before the broker took the mechanism it comes back out (the broker was not reached),
    after it, it is a refusal."""
    handshake = yield SaslHandshakeRequest[HANDSHAKE_VERSION](mechanism=mechanism_name)
    if handshake.error_code != 0 or mechanism_name not in handshake.mechanisms:
        offered = ", ".join(handshake.mechanisms or ()) or "none"
        raise LoginRefused(f"does not offer SASL {mechanism_name} (it offers {offered})")
    while not mechanism.is_done():
        try:
            answer = yield SaslAuthenticateRequest[AUTHENTICATE_VERSION](auth_bytes=mechanism.auth_bytes())
        except CONNECTION_CLOSED:
            raise LoginRefused("closed the connection during the login (a refusal)") from None
        if answer.error_code != 0:
            raise LoginRefused(f"refused the login: {answer.error_message}")
        try:
            mechanism.receive(answer.auth_bytes)
        except (ValueError, KeyError) as exc:  # a malformed answer, or a wrong server signature
            raise LoginRefused(f"failed the SCRAM exchange: {exc}") from None
    if not mechanism.is_authenticated():
        raise LoginRefused(f"did not accept the SASL {mechanism_name} login")


def converse(login: SaslLogin, send: Callable[[Any], Any]) -> None:
    """Drive ``login`` over a blocking transport: ``send(request)`` answers the broker's response. Returns when the
    broker accepted; raises LoginRefused, or the transport's error when the broker was not reached.

    The conversation is ``converse_async``'s, run to its end in one step: a transport that never suspends leaves
    the coroutine nothing to wait for, so it needs no event loop."""

    async def answered(request: Any) -> Any:
        return send(request)

    conversation = converse_async(login, answered)
    try:
        conversation.send(None)
    except StopIteration:
        return
    conversation.close()
    raise RuntimeError("a blocking SASL conversation was suspended")  # a bug: nothing here awaits anything real


async def converse_async(login: SaslLogin, send: Callable[[Any], Awaitable[Any]]) -> None:
    """Drive ``login`` over an asynchronous transport (kafka-python's connections): ``await send(request)``
    answers the broker's response; the login may retry a request on a connection that closed (it decides)."""
    try:
        request = next(login)
        while True:
            try:
                answer = await send(request)
            except CONNECTION_CLOSED as exc:
                request = login.throw(exc)
            else:
                request = login.send(answer)
    except StopIteration:
        return
