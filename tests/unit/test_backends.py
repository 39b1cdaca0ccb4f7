"""The composition root's list of backend settings groups (app/backends.py): every key read once, the backend in
use chosen in order, each group reachable only where its backend is the one in use, and no Kafka client library
loaded by a ZooKeeper replica's settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.backends import BACKEND_SETTINGS, all_setting_fields, load_settings
from app.settings import ConfigError, Settings, env_name, property_key
from app.storage.kafka.settings import KafkaSettings
from app.storage.zk.settings import ZooKeeperSettings

SECRET = {"delegation_token_secret_key": "s"}


def test_zookeeper_is_chosen_first_and_the_other_group_is_refused_by_its_key() -> None:
    settings = load_settings(**SECRET, zookeeper_connect="zk:2181", bootstrap_servers="b:9092")
    assert [backend.name for backend in BACKEND_SETTINGS] == ["zookeeper", "kafka"]
    assert settings.backend == "zookeeper" and isinstance(settings.cluster, ZooKeeperSettings)
    with pytest.raises(ConfigError, match=r"^bootstrap\.servers: missing$"):
        settings.group(KafkaSettings)
    kafka = load_settings(**SECRET, bootstrap_servers="b:9092")
    with pytest.raises(ConfigError, match=r"^zookeeper\.connect: missing$"):
        kafka.group(ZooKeeperSettings)


def test_every_key_is_one_field_named_as_its_variable() -> None:
    fields = all_setting_fields()
    assert set(Settings.model_fields) <= set(fields)
    for backend in BACKEND_SETTINGS:
        assert backend.selector in fields
    for name in fields:
        assert property_key(name).replace(".", "_") == name and env_name(name) == "KTS_" + name.upper()
    # shared by two groups, read as one key: kts's login on bootstrap.servers (prepare-migration reads it too)
    assert "admin_sasl_jaas_config" in fields


def test_a_group_key_from_the_environment_and_from_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    properties = tmp_path / "kts.properties"
    properties.write_text(
        "zookeeper.connect=zk:2181\nzookeeper.session.timeout.ms=6000\ncluster.cache.refresh.ms=500\n"
    )
    monkeypatch.setenv("kts_zookeeper_session_timeout_ms", "7000")  # as pydantic-settings reads them: any case
    settings = load_settings(properties, **SECRET)
    assert settings.group(ZooKeeperSettings).session_timeout_ms == 7_000
    assert load_settings(properties, **SECRET, zookeeper_session_timeout_ms=8_000).cluster == ZooKeeperSettings(
        zookeeper_connect="zk:2181", zookeeper_session_timeout_ms=8_000
    )


def test_a_misspelled_group_key_in_the_file_refuses_the_start(tmp_path: Path) -> None:
    properties = tmp_path / "kts.properties"
    properties.write_text("zookeeper.connect=zk:2181\nzookeeper.sesion.timeout.ms=6000\n")
    with pytest.raises(ConfigError, match=r"did you mean zookeeper\.session\.timeout\.ms\?"):
        load_settings(properties, **SECRET)


def test_a_zookeeper_replica_loads_no_kafka_client_library() -> None:
    """The Kafka group is built (and its keys checked) on every replica, but imports neither kafka-python nor kio."""
    script = (
        "import sys\n"
        "from app.backends import load_settings\n"
        "import app.runtime\n"
        "load_settings(zookeeper_connect='zk:2181', delegation_token_secret_key='s')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kafka', 'kio')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"
