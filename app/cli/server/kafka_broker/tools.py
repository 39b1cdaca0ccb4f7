"""Kafka's command-line tools as the release's ``bin/*.sh`` scripts run them: the main class of each, per release.

The jars from Maven Central have no ``bin/`` directory, so kts runs a tool as its script would
(``java -cp 'libs/*' <class>``). Some classes moved from Scala (``kafka.admin``, ``kafka.tools``) to Java
(``org.apache.kafka.tools``) release by release (``DelegationTokenCommand`` in 3.5, ``AclCommand`` in 4.0,
``ConfigCommand`` in 4.4): a release runs whichever of a tool's classes its jars hold
(``KafkaRelease.main_class``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaTool:
    """One of Kafka's scripts: ``kafka-<name>.sh`` runs ``kraft_class`` from 4.0 on, ``zookeeper_mode_class`` in
    3.x. ``config_option`` is the option naming a client properties file (a login), when the tool takes one."""

    name: str
    kraft_class: str
    zookeeper_mode_class: str
    config_option: str | None = "--command-config"

    @property
    def script(self) -> str:
        return f"kafka-{self.name}.sh"

    @property
    def short_class(self) -> str:
        return self.kraft_class.rsplit(".", 1)[1]

    @property
    def classes(self) -> tuple[str, ...]:
        """Where the tool's class may live, newest first (a release's jars hold one of them)."""
        return tuple(dict.fromkeys((self.kraft_class, self.zookeeper_mode_class)))


_TOOLS = "org.apache.kafka.tools"
TOOLS: tuple[KafkaTool, ...] = (
    KafkaTool("acls", f"{_TOOLS}.AclCommand", "kafka.admin.AclCommand"),
    KafkaTool("configs", f"{_TOOLS}.ConfigCommand", "kafka.admin.ConfigCommand"),
    KafkaTool("console-producer", f"{_TOOLS}.ConsoleProducer", "kafka.tools.ConsoleProducer", "--producer.config"),
    KafkaTool(
        "console-consumer",
        f"{_TOOLS}.consumer.ConsoleConsumer",
        f"{_TOOLS}.consumer.ConsoleConsumer",
        "--consumer.config",
    ),
    KafkaTool(
        "consumer-groups",
        f"{_TOOLS}.consumer.group.ConsumerGroupCommand",
        f"{_TOOLS}.consumer.group.ConsumerGroupCommand",
    ),
    KafkaTool("delegation-tokens", f"{_TOOLS}.DelegationTokenCommand", "kafka.admin.DelegationTokenCommand"),
    KafkaTool("features", f"{_TOOLS}.FeatureCommand", f"{_TOOLS}.FeatureCommand"),
    KafkaTool("get-offsets", f"{_TOOLS}.GetOffsetShell", f"{_TOOLS}.GetOffsetShell", "--command-config"),
    KafkaTool("metadata-quorum", f"{_TOOLS}.MetadataQuorumCommand", f"{_TOOLS}.MetadataQuorumCommand"),
    KafkaTool("storage", "kafka.tools.StorageTool", "kafka.tools.StorageTool", None),
    KafkaTool("topics", f"{_TOOLS}.TopicCommand", f"{_TOOLS}.TopicCommand"),
)


class UnknownTool(ValueError):
    """Not one of ``TOOLS``: the message lists them."""


def tool_named(name: str) -> KafkaTool:
    """A tool by its script's name with or without ``kafka-`` and ``.sh`` (``acls``, ``kafka-acls.sh``) or by
    its class's short name (``AclCommand``)."""
    wanted = name.removesuffix(".sh").removeprefix("kafka-")
    for tool in TOOLS:
        if wanted in (tool.name, tool.short_class):
            return tool
    raise UnknownTool(f"no Kafka tool named {name!r}; one of: {', '.join(tool.name for tool in TOOLS)}")
