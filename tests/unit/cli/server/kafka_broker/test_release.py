"""The table of releases and the lookup of a tool's class in a release's own jars (no Maven, no broker)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from app.cli.server.kafka_broker.release import (
    KRAFT_RELEASE,
    RELEASES,
    ZOOKEEPER_MODE_RELEASE,
    KafkaRelease,
    KafkaUnavailable,
    fetch,
)


def _release(tmp_path: Path, version: str, *classes: str) -> KafkaRelease:
    libs = tmp_path / version / "libs"
    libs.mkdir(parents=True)
    with zipfile.ZipFile(libs / f"kafka_2.13-{version}.jar", "w") as jar:
        for name in classes:
            jar.writestr(name.replace(".", "/") + ".class", b"")
    return KafkaRelease(version, libs)


def test_the_newest_of_each_mode_is_what_make_test_runs() -> None:
    assert (ZOOKEEPER_MODE_RELEASE, KRAFT_RELEASE) == ("3.9.2", RELEASES[-1])
    assert list(RELEASES) == sorted(RELEASES, key=lambda v: tuple(int(p) for p in v.split(".")))
    assert all(tuple(int(p) for p in v.split("."))[:2] >= (3, 3) for v in RELEASES)  # older stay out


def test_a_tool_is_the_class_the_release_holds(tmp_path: Path) -> None:
    old = _release(tmp_path, "3.3.2", "kafka.admin.DelegationTokenCommand", "kafka.admin.AclCommand")
    new = _release(tmp_path, "4.4.0", "org.apache.kafka.tools.DelegationTokenCommand", "kafka.admin.AclCommand$")
    assert old.main_class("DelegationTokenCommand") == "kafka.admin.DelegationTokenCommand"
    assert old.main_class("AclCommand") == "kafka.admin.AclCommand"
    assert new.main_class("DelegationTokenCommand") == "org.apache.kafka.tools.DelegationTokenCommand"
    assert new.main_class("AclCommand") == "org.apache.kafka.tools.AclCommand"  # none held: the newest name
    assert new.main_class("TopicCommand") == "org.apache.kafka.tools.TopicCommand"


def test_a_release_not_in_the_table_is_refused_in_one_line(tmp_path: Path) -> None:
    try:
        fetch("3.2.3", tmp_path)
    except KafkaUnavailable as exc:
        assert str(exc).startswith("Kafka 3.2.3 is not one of the releases kts runs: 3.3.2, ")
    else:
        raise AssertionError("3.2.3 was fetched")
