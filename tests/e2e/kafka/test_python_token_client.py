"""kts's token mechanism plugged into kafka-python's own clients: a producer and a consumer of kafka-python log in
with a kts token and move a record through a real broker. They run in a process of their own
(tests/e2e/kafka/python_token_client.py), because the plug-in goes into kafka-python's process-wide registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from app.cli.client.kafka_login import Credentials
from tests.e2e.conftest import ROOT
from tests.e2e.kafka.conftest import Kts
from tests.e2e.kafka.python_token_client import VALUE
from tests.kafka.brokers import RunningBroker


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
    client = subprocess.run(
        [sys.executable, "-m", "tests.e2e.kafka.python_token_client", kafka_zk_broker.bootstrap, topic],
        cwd=ROOT,
        env={**os.environ, "TOKEN_ID": credentials.username, "TOKEN_HMAC": credentials.password},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert client.returncode == 0, client.stderr[-3000:]
    moved = json.loads(client.stdout.splitlines()[-1])
    print(f"kafka-python produced at offset {moved['offset']}, consumed {moved['value']!r}, token {token['tokenId']}")
    assert moved["value"] == VALUE.decode()
