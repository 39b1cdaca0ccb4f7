"""A workload of kafka-python's own clients logging in with a kts token, in a process of its own:
``python -m tests.e2e.kafka.python_token_client BOOTSTRAP TOPIC`` with the token in ``TOKEN_ID`` and ``TOKEN_HMAC``.

kafka-python takes a SASL mechanism by name from one registry per process, so the only way to give its producer and
consumer the token mechanism is ``register_sasl_mechanism``, which turns every SCRAM-SHA-512 login of the process
into a token login. That is right for a process that is nothing but a token client, as this one, and wrong in the
test process, where kts's own logins and the broker fixtures' admin clients log in with passwords
(tests/e2e/kafka/test_sasl_registry.py shows what breaks). Prints one JSON line: the offset and the value read back.
"""

from __future__ import annotations

import json
import os
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.net import sasl

from app.storage.kafka.sasl import ScramTokenMechanism

VALUE = b"from kafka-python with a kts token"


def main(bootstrap: str, topic: str) -> None:
    sasl.register_sasl_mechanism("SCRAM-SHA-512", ScramTokenMechanism, overwrite=True)
    login = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": os.environ["TOKEN_ID"],
        "sasl_plain_password": os.environ["TOKEN_HMAC"],
    }
    producer = KafkaProducer(**login, acks="all", enable_idempotence=False)
    try:
        sent = producer.send(topic, VALUE, partition=0).get(timeout=60)
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
    print(json.dumps({"offset": sent.offset, "value": record.value.decode()}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
