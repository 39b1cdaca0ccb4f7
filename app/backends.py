"""The cluster backends kts knows, in the order that picks the one in use (the first whose key is set): each
backend's settings group lives with the backend (``app/storage/<backend>/settings.py``) and app/settings.py, which
imports no backend, is handed them here. Adding a backend adds its group to ``BACKEND_SETTINGS``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from app.settings import BackendGroup, Settings, read_settings, setting_fields
from app.storage.kafka.settings import KafkaSettings
from app.storage.zk.settings import ZooKeeperSettings

# ZooKeeper first: wherever zookeeper.connect is set it is used, as before bootstrap.servers existed.
BACKEND_SETTINGS: tuple[type[BackendGroup], ...] = (ZooKeeperSettings, KafkaSettings)


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from the file, the environment and explicit overrides (``zookeeper_connect=...``), with every
    backend's group, or ConfigError naming the key."""
    return read_settings(config_file, BACKEND_SETTINGS, **overrides)


def all_setting_fields() -> dict[str, FieldInfo]:
    """Every key kts reads, as a field name (``zookeeper_connect``), and its field: the service's and each
    backend's (the reference in docs/configuration.md lists them all)."""
    return setting_fields(BACKEND_SETTINGS)
