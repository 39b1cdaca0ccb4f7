"""A Kafka client logs in with a token: kafka-python's ScramClient, given the tokenId and base64 HMAC as a
JAAS file gives them (``tokenauth="true"``), completes SCRAM-SHA-256 and SCRAM-SHA-512 exchanges against
the credentials a broker derives for the token (its base64 HMAC as the password, 4096 iterations).

The Java client sends ``n,,n=<tokenId>,r=<nonce>,tokenauth=true`` and its AuthMessage includes the
extension in client-first-message-bare. kafka-python's ScramClient does not add the extension, so the
client side appends it to both its first message and its ``auth_message``. scramp (the broker side here)
cannot parse Kafka's multi-letter extension, so the server is given the message without it and then
told the real client-first-message-bare, extension included.
"""

from __future__ import annotations

import base64
import re
import warnings
from dataclasses import dataclass

import pytest
import scramp

from app.domain.credentials import Mechanism, ScramCredential
from app.domain.scram import derive
from app.domain.token_secret import TokenSecret, encode_hmac, new_token_id

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.net.sasl.scram import ScramClient

TOKENAUTH_EXTENSION = ",tokenauth=true"
TOKEN_ITERATIONS = 4096  # what a broker uses for every token credential
VECTOR_SECRET = "test12345"
VECTOR_TOKEN_ID = "E8gTWaIxRUOaSRH7wY3N1w"

_JAAS = re.compile(
    r"org\.apache\.kafka\.common\.security\.scram\.ScramLoginModule required "
    r'username="(?P<username>[^"]*)" password="(?P<password>[^"]*)" tokenauth="(?P<tokenauth>[^"]*)";'
)


@dataclass(frozen=True)
class JaasLogin:
    username: str
    password: str
    tokenauth: bool


def jaas_config(token_id: str, hmac_text: str) -> str:
    """The sasl.jaas.config line docs/kafka-compatibility.md tells a Kafka client to use for a token."""
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{token_id}" password="{hmac_text}" tokenauth="true";'
    )


def parse_jaas(text: str) -> JaasLogin:
    match = _JAAS.fullmatch(text)
    assert match is not None, "not a ScramLoginModule JAAS line"
    return JaasLogin(match["username"], match["password"], match["tokenauth"] == "true")


def token_hmac_text(secret: str, token_id: str) -> str:
    return encode_hmac(TokenSecret(secret).hmac(token_id))


class KafkaTokenClient:
    """kafka-python's ScramClient behaving like the Java client with ``tokenauth=true``."""

    def __init__(self, login: JaasLogin, mechanism: Mechanism) -> None:
        assert login.tokenauth
        self.scram = ScramClient(login.username, login.password, mechanism.value)

    def first_message(self) -> bytes:
        message = self.scram.first_message() + TOKENAUTH_EXTENSION.encode()
        self.scram.auth_message += TOKENAUTH_EXTENSION.encode()
        return message

    def process_server_first_message(self, message: bytes) -> None:
        self.scram.process_server_first_message(message)

    def final_message(self) -> bytes:
        return self.scram.final_message()

    def process_server_final_message(self, message: bytes) -> None:
        self.scram.process_server_final_message(message)


class BrokerTokenServer:
    """A broker's view of the exchange, on scramp: it requires the tokenauth extension and looks the
    token's credential up by the tokenId the client names."""

    def __init__(self, mechanism: Mechanism, credentials: dict[str, ScramCredential]) -> None:
        self.looked_up: list[str] = []

        def auth_fn(username: str) -> tuple[bytes, bytes, bytes, int] | None:
            self.looked_up.append(username)
            credential = credentials.get(username)
            if credential is None:
                return None
            return credential.salt, credential.stored_key, credential.server_key, credential.iterations

        self.server = scramp.ScramMechanism(mechanism.value).make_server(auth_fn)

    def receive_client_first(self, message: bytes) -> None:
        text = message.decode("utf-8")
        assert text.startswith("n,,"), "a Kafka client sends no authzid and no channel binding"
        bare = text.removeprefix("n,,")
        extensions = dict(part.split("=", 1) for part in bare.split(",")[2:])
        assert extensions == {"tokenauth": "true"}, "a broker only looks up tokens for tokenauth=true"
        self.server.set_client_first(text.removesuffix(TOKENAUTH_EXTENSION))
        self.server.client_first_bare = bare  # the AuthMessage covers the extension, as in Kafka

    def server_first(self) -> bytes:
        return self.server.get_server_first().encode("utf-8")

    def receive_client_final(self, message: bytes) -> None:
        self.server.set_client_final(message.decode("utf-8"))

    def server_final(self) -> bytes:
        return self.server.get_server_final().encode("utf-8")


def broker_for(mechanism: Mechanism, token_id: str, broker_hmac_text: str) -> BrokerTokenServer:
    return BrokerTokenServer(mechanism, {token_id: derive(mechanism, broker_hmac_text, TOKEN_ITERATIONS)})


def run_exchange(client: KafkaTokenClient, broker: BrokerTokenServer) -> None:
    broker.receive_client_first(client.first_message())
    client.process_server_first_message(broker.server_first())
    broker.receive_client_final(client.final_message())
    client.process_server_final_message(broker.server_final())


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_kafka_client_completes_exchange_with_the_vector_token(mechanism: Mechanism) -> None:
    hmac_text = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    login = parse_jaas(jaas_config(VECTOR_TOKEN_ID, hmac_text))
    client = KafkaTokenClient(login, mechanism)
    broker = broker_for(mechanism, VECTOR_TOKEN_ID, hmac_text)

    run_exchange(client, broker)  # raises if either side refuses the other

    assert broker.looked_up == [VECTOR_TOKEN_ID]


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_kafka_client_completes_exchange_with_a_fresh_token(mechanism: Mechanism) -> None:
    token_id = new_token_id()
    hmac_text = token_hmac_text("a-fresh-secret-key", token_id)
    client = KafkaTokenClient(parse_jaas(jaas_config(token_id, hmac_text)), mechanism)

    run_exchange(client, broker_for(mechanism, token_id, hmac_text))


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_client_first_message_has_kafka_token_shape(mechanism: Mechanism) -> None:
    hmac_text = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    client = KafkaTokenClient(parse_jaas(jaas_config(VECTOR_TOKEN_ID, hmac_text)), mechanism)
    message = client.first_message().decode("utf-8")
    assert re.fullmatch(r"n,,n=E8gTWaIxRUOaSRH7wY3N1w,r=[^,]+,tokenauth=true", message)


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_server_first_message_announces_4096_iterations(mechanism: Mechanism) -> None:
    hmac_text = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    client = KafkaTokenClient(parse_jaas(jaas_config(VECTOR_TOKEN_ID, hmac_text)), mechanism)
    broker = broker_for(mechanism, VECTOR_TOKEN_ID, hmac_text)
    broker.receive_client_first(client.first_message())
    assert broker.server_first().endswith(b",i=4096")


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_hmac_from_another_secret_fails_at_the_server(mechanism: Mechanism) -> None:
    right = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    wrong = token_hmac_text("another-secret", VECTOR_TOKEN_ID)
    assert wrong != right
    client = KafkaTokenClient(parse_jaas(jaas_config(VECTOR_TOKEN_ID, wrong)), mechanism)
    broker = broker_for(mechanism, VECTOR_TOKEN_ID, right)

    broker.receive_client_first(client.first_message())
    client.process_server_first_message(broker.server_first())
    with pytest.raises(scramp.ScramException):
        broker.receive_client_final(client.final_message())
    assert broker.server_final() == b"e=invalid-proof"


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_hmac_of_another_token_fails_at_the_server(mechanism: Mechanism) -> None:
    other_id = new_token_id()
    wrong = token_hmac_text(VECTOR_SECRET, other_id)
    client = KafkaTokenClient(parse_jaas(jaas_config(VECTOR_TOKEN_ID, wrong)), mechanism)
    broker = broker_for(mechanism, VECTOR_TOKEN_ID, token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID))

    broker.receive_client_first(client.first_message())
    client.process_server_first_message(broker.server_first())
    with pytest.raises(scramp.ScramException):
        broker.receive_client_final(client.final_message())


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_auth_message_without_the_extension_fails_at_the_server(mechanism: Mechanism) -> None:
    """The extension is part of what the client proof signs: a client that sends it but leaves it out of
    its AuthMessage (kafka-python as it is) does not authenticate against a broker."""
    hmac_text = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    scram_client = ScramClient(VECTOR_TOKEN_ID, hmac_text, mechanism.value)
    broker = broker_for(mechanism, VECTOR_TOKEN_ID, hmac_text)

    broker.receive_client_first(scram_client.first_message() + TOKENAUTH_EXTENSION.encode())
    scram_client.process_server_first_message(broker.server_first())
    with pytest.raises(scramp.ScramException):
        broker.receive_client_final(scram_client.final_message())


@pytest.mark.parametrize("mechanism", list(Mechanism))
def test_client_refuses_a_forged_server_signature(mechanism: Mechanism) -> None:
    hmac_text = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    client = KafkaTokenClient(parse_jaas(jaas_config(VECTOR_TOKEN_ID, hmac_text)), mechanism)
    broker = broker_for(mechanism, VECTOR_TOKEN_ID, hmac_text)

    broker.receive_client_first(client.first_message())
    client.process_server_first_message(broker.server_first())
    broker.receive_client_final(client.final_message())
    genuine = broker.server_final()
    signature = bytearray(base64.b64decode(genuine.removeprefix(b"v=")))
    signature[0] ^= 0x01
    forged = b"v=" + base64.b64encode(bytes(signature))
    with pytest.raises(ValueError, match="wrong signature"):
        client.process_server_final_message(forged)
    client.process_server_final_message(genuine)


def test_client_first_without_tokenauth_is_refused_by_the_broker() -> None:
    hmac_text = token_hmac_text(VECTOR_SECRET, VECTOR_TOKEN_ID)
    scram_client = ScramClient(VECTOR_TOKEN_ID, hmac_text, Mechanism.SCRAM_SHA_256.value)
    broker = broker_for(Mechanism.SCRAM_SHA_256, VECTOR_TOKEN_ID, hmac_text)
    with pytest.raises(AssertionError, match="tokenauth"):
        broker.receive_client_first(scram_client.first_message())
