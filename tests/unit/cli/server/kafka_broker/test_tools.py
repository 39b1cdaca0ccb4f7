"""Kafka's tools by script name: the classes each may run as in a release (checked against the jars by
tests/e2e/kafka/test_kts_dev_kraft.py and test_kts_dev_config_cluster.py, which run them)."""

from __future__ import annotations

import re

import pytest

from app.cli.server.kafka_broker.tools import UnknownTool, tool_named


@pytest.mark.parametrize("name", ["acls", "kafka-acls.sh", "kafka-acls", "AclCommand"])
def test_a_tool_is_found_by_its_script_or_class_name(name: str) -> None:
    assert tool_named(name).script == "kafka-acls.sh"


@pytest.mark.parametrize(
    ("tool", "classes"),
    [
        ("acls", ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")),
        ("ConfigCommand", ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")),
        ("console-producer", ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer")),
        ("delegation-tokens", ("org.apache.kafka.tools.DelegationTokenCommand", "kafka.admin.DelegationTokenCommand")),
        ("StorageTool", ("kafka.tools.StorageTool",)),
    ],
)
def test_a_tool_names_its_classes_newest_first(tool: str, classes: tuple[str, ...]) -> None:
    """A release runs the first of them its jars hold (tests/unit/cli/server/kafka_broker/test_release.py)."""
    assert tool_named(tool).classes == classes


def test_the_console_tools_take_their_login_with_their_own_option() -> None:
    assert tool_named("console-producer").config_option == "--producer.config"
    assert tool_named("console-consumer").config_option == "--consumer.config"
    assert tool_named("acls").config_option == "--command-config"


def test_an_unknown_tool_names_the_known_ones() -> None:
    with pytest.raises(UnknownTool, match=re.escape("no Kafka tool named 'kafka-nope.sh'; one of: acls, configs")):
        tool_named("kafka-nope.sh")
