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
CONFIG_BROKERS = f"{CONFIG_ROOT}/brokers"  # kts never writes it; named for the ACL policy (acls_for_paths.py)
CONFIG_CHANGES = f"{CONFIG_ROOT}/changes"
CONFIG_CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"

# ACLs (Kafka's AclAuthorizer): literal patterns in the original store, prefixed ones in the extended store,
# each with its own change-notification queue.
ACL_LITERAL_ROOT = "/kafka-acl"
ACL_PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
ACL_LITERAL_CHANGES = "/kafka-acl-changes"
ACL_PREFIXED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_NAME_PREFIX = "acl_changes_"
ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")

# kts's own znodes. An audit intent marks a change whose audit event was written as pending; it is created
# in the same transaction as the change, so its presence proves the change happened (app/service/audit.py).
KTS_ROOT = "/kts"
AUDIT_INTENTS = f"{KTS_ROOT}/audit-intents"
SWEEPER_ELECTION = f"{KTS_ROOT}/sweeper-election"

# Created on start so every later write can assume its parent exists, as brokers do.
PERSISTENT_PATHS = (
    AUDIT_INTENTS,
    TOKENS,
    TOKEN_CHANGES,
    CONFIG_USERS,
    CONFIG_CHANGES,
    ACL_LITERAL_CHANGES,
    ACL_PREFIXED_CHANGES,
    *(f"{root}/{kind}" for root in (ACL_LITERAL_ROOT, ACL_PREFIXED_ROOT) for kind in ACL_RESOURCE_TYPES),
)


def token_path(token_id: str) -> str:
    return f"{TOKENS}/{token_id}"


def user_config_path(user_name: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user_name)}"


def user_entity_path(user_name: str) -> str:
    """The ``entity_path`` a config change notification names."""
    return f"users/{sanitize(user_name)}"


def acl_root(prefixed: bool) -> str:
    return ACL_PREFIXED_ROOT if prefixed else ACL_LITERAL_ROOT


def acl_changes(prefixed: bool) -> str:
    return ACL_PREFIXED_CHANGES if prefixed else ACL_LITERAL_CHANGES


def acl_path(resource_type: str, name: str, *, prefixed: bool) -> str:
    """Resource names go into the path as they are, as Kafka does (kts refuses names containing '/')."""
    return f"{acl_root(prefixed)}/{resource_type}/{name}"


def audit_intent_path(event_id: int) -> str:
    return f"{AUDIT_INTENTS}/{event_id}"
