"""The catalogue of znodes kts reads and writes, relative to the ``zookeeper.connect`` chroot
(Kafka's ``ZkData.scala``). Codecs for their data live beside this module."""

from __future__ import annotations

from app.storage.zk.sanitizer import sanitize

DELEGATION_TOKEN_ROOT = "/delegation_token"
TOKENS = f"{DELEGATION_TOKEN_ROOT}/tokens"
TOKEN_CHANGES = f"{DELEGATION_TOKEN_ROOT}/token_changes"
TOKEN_CHANGE_PREFIX = f"{TOKEN_CHANGES}/token_change_"

CONFIG_ROOT = "/config"
CONFIG_USERS = f"{CONFIG_ROOT}/users"
CONFIG_CHANGES = f"{CONFIG_ROOT}/changes"
CONFIG_CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"

# Created on start so every later write can assume its parent exists, as brokers do.
PERSISTENT_PATHS = (TOKENS, TOKEN_CHANGES, CONFIG_USERS, CONFIG_CHANGES)


def token_path(token_id: str) -> str:
    return f"{TOKENS}/{token_id}"


def user_config_path(user_name: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user_name)}"


def user_entity_path(user_name: str) -> str:
    """The ``entity_path`` a config change notification names."""
    return f"users/{sanitize(user_name)}"
