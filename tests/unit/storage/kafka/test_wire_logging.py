"""kafka-python's guess of the broker's version (4.3 against a 4.4.0 broker: its table ends there) is not logged;
its other connection lines are."""

from __future__ import annotations

import logging

import pytest

from app.storage.kafka import client_logging


def test_the_broker_version_guess_is_dropped_and_nothing_else(caplog: pytest.LogCaptureFixture) -> None:
    client_logging.install()
    connection = logging.getLogger("kafka.net.connection")
    with caplog.at_level(logging.INFO, logger="kafka.net.connection"):
        connection.info("%s: Broker version identified as %s", "<KafkaConnection node_id=1>", "4.3")
        connection.info("%s: Authenticated as %s via SASL / %s", "<KafkaConnection node_id=1>", "kts", "SCRAM-SHA-512")
    assert [record.getMessage() for record in caplog.records] == [
        "<KafkaConnection node_id=1>: Authenticated as kts via SASL / SCRAM-SHA-512"
    ]
