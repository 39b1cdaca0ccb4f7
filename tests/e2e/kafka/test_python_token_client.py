"""kts's token mechanism plugged into kafka-python's own clients (``register_sasl_mechanism``): a producer and a
consumer of kafka-python log in with a kts token and move a record through a real broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.net import sasl

from app.cli.client.kafka_login import Credentials, ScramTokenMechanism
from tests.e2e.kafka.conftest import Kts
from tests.kafka.brokers import RunningBroker


@contextmanager
def token_logins() -> Iterator[None]:
    """Every SCRAM-SHA-512 login of this process's kafka-python clients a token login, for a while (the registry
    is global: the fixtures' own admin clients log in as users, outside this)."""
    stock = sasl.get_sasl_mechanism("SCRAM-SHA-512")
    sasl.register_sasl_mechanism("SCRAM-SHA-512", ScramTokenMechanism, overwrite=True)
    yield
    sasl.register_sasl_mechanism("SCRAM-SHA-512", stock, overwrite=True)


def test_kafka_pythons_producer_and_consumer_log_in_with_a_kts_token(kafka_zk_broker: RunningBroker, kts: Kts) -> None:
    owner = kafka_zk_broker.new_user("python")
    topic = kafka_zk_broker.create_topic()
    kafka_zk_broker.acls(
        "--add", "--allow-principal", f"User:{owner.name}", "--operation", "Write", "--operation", "Read",
        "--topic", topic,
    )  # fmt: skip
    token = kts.create_token(owner)
    credentials = Credentials(str(token["tokenId"]), str(token["hmac"]), token=True)
    kafka_zk_broker.wait_for_login(credentials)
    login = {
        "bootstrap_servers": kafka_zk_broker.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": credentials.username,
        "sasl_plain_password": credentials.password,
    }
    with token_logins():
        producer = KafkaProducer(**login, acks="all", enable_idempotence=False)
        try:
            sent = producer.send(topic, b"from kafka-python with a kts token", partition=0).get(timeout=60)
        finally:
            producer.close()
        consumer = KafkaConsumer(**login, enable_auto_commit=False, consumer_timeout_ms=30000)
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, sent.offset)
            record = next(iter(consumer))
        finally:
            consumer.close()
    print(f"kafka-python produced at offset {sent.offset} and consumed {record.value!r} with token {token['tokenId']}")
    assert record.value == b"from kafka-python with a kts token"
