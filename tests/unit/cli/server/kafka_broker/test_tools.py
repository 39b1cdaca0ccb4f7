"""Kafka's tools by script name: the class each runs in the pinned releases (checked against the jars by
tests/e2e/kafka/test_kts_dev_kraft.py and test_kts_dev_config_cluster.py, which run them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.cli.server.kafka_broker.release import KafkaRelease
from app.cli.server.kafka_broker.tools import UnknownTool, tool_named

ZOOKEEPER_MODE = KafkaRelease("3.9.1", Path("/nowhere"))
KRAFT = KafkaRelease("4.4.0", Path("/nowhere"))


@pytest.mark.parametrize("name", ["acls", "kafka-acls.sh", "kafka-acls", "AclCommand"])
def test_a_tool_is_found_by_its_script_or_class_name(name: str) -> None:
    assert tool_named(name).script == "kafka-acls.sh"


@pytest.mark.parametrize(
    ("tool", "zookeeper_mode", "kraft"),
    [
        ("acls", "kafka.admin.AclCommand", "org.apache.kafka.tools.AclCommand"),
        ("ConfigCommand", "kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand"),
        ("console-producer", "kafka.tools.ConsoleProducer", "org.apache.kafka.tools.ConsoleProducer"),
        (
            "delegation-tokens",
            "org.apache.kafka.tools.DelegationTokenCommand",
            "org.apache.kafka.tools.DelegationTokenCommand",
        ),
        ("StorageTool", "kafka.tools.StorageTool", "kafka.tools.StorageTool"),
    ],
)
def test_each_release_runs_its_own_class(tool: str, zookeeper_mode: str, kraft: str) -> None:
    assert ZOOKEEPER_MODE.main_class(tool) == zookeeper_mode
    assert KRAFT.main_class(tool) == kraft


def test_the_console_tools_take_their_login_with_their_own_option() -> None:
    assert tool_named("console-producer").config_option == "--producer.config"
    assert tool_named("console-consumer").config_option == "--consumer.config"
    assert tool_named("acls").config_option == "--command-config"


def test_an_unknown_tool_names_the_known_ones() -> None:
    with pytest.raises(UnknownTool, match=re.escape("no Kafka tool named 'kafka-nope.sh'; one of: acls, configs")):
        tool_named("kafka-nope.sh")
