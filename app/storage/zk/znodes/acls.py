"""ACL znodes and their change notifications, in the formats of Kafka's ``AclAuthorizer`` (``ZkData``'s
``ResourceZNode``, ``ExtendedAclZNode``, ``AclChangeNotificationSequenceZNode`` and
``ExtendedAclChangeNotificationSequenceZNode``).

- resource znode: ``{"version":1,"acls":[{"principal":..,"permissionType":..,"operation":..,"host":..}]}``
- literal change: the text ``<RESOURCE_TYPE>:<name>`` (e.g. ``USER:User:alice``)
- prefixed change: ``{"version":1,"resourceType":"USER","name":..,"patternType":"PREFIXED"}``

Literal patterns live in the original store, prefixed ones in the extended store, each with its own
change-notification queue.

Two spellings of a resource type: the paths use the CamelCase names of ``SecurityUtils.resourceTypeName``
(``/kafka-acl/TransactionalId/...``), the change notifications the names of Java's ``ResourceType`` enum
(``TRANSACTIONAL_ID``: ``resourceType.toString`` and ``.name``), which brokers read back with
``ResourceType.fromString``, case-insensitively. A broker reads a CamelCase ``TransactionalId`` or
``DelegationToken`` as ``UNKNOWN``, so kts writes the enum names; it reads either spelling, in any case
(brokers before 2.0 wrote ``Topic:name``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Final

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.storage.zk.znodes.malformed import MalformedZNode

_ENTRY_KEYS = ("principal", "permissionType", "operation", "host")
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def java_enum_name(resource_type: str) -> str:
    """``TransactionalId`` -> ``TRANSACTIONAL_ID``: how Kafka's ``ResourceType`` enum names a resource type."""
    return _WORD_START.sub("_", resource_type).upper()


def _folder_name(text: str) -> str:
    """A resource type as a notification spells it (``USER``, ``transactional_id``, ``Topic``) -> its path name
    (``User``, ``TransactionalId``, ``Topic``). A type kts does not know is passed on as it is."""
    key = text.replace("_", "").upper()
    for known in AclZNode.RESOURCE_TYPES:
        if known.upper() == key:
            return known
    return text


class AclZNode:
    """``/kafka-acl/<ResourceType>/<name>`` (literal) or ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``:
    the ACL entries of one resource pattern."""

    LITERAL_ROOT: Final = "/kafka-acl"
    PREFIXED_ROOT: Final = "/kafka-acl-extended/prefixed"
    RESOURCE_TYPES: Final = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")

    @staticmethod
    def root(pattern_type: PatternType) -> str:
        return AclZNode.PREFIXED_ROOT if pattern_type is PatternType.PREFIXED else AclZNode.LITERAL_ROOT

    @staticmethod
    def type_root(pattern_type: PatternType, resource_type: str) -> str:
        """The folder holding every pattern of one resource type."""
        return f"{AclZNode.root(pattern_type)}/{resource_type}"

    @staticmethod
    def path(pattern: ResourcePattern) -> str:
        """Resource names go into the path as they are, as Kafka does (kts refuses names containing '/')."""
        return f"{AclZNode.type_root(pattern.pattern_type, pattern.resource_type)}/{pattern.name}"

    @staticmethod
    def encode(entries: Iterable[AccessControlEntry]) -> bytes:
        acls = [
            {"principal": e.principal, "permissionType": e.permission, "operation": e.operation, "host": e.host}
            for e in sorted(entries)
        ]
        return json.dumps({"version": 1, "acls": acls}, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> frozenset[AccessControlEntry]:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedZNode("ACL znode is not UTF-8 JSON") from exc
        acls = doc.get("acls") if isinstance(doc, dict) else None
        if not isinstance(acls, list):
            raise MalformedZNode("ACL znode has no acls list")
        entries = set()
        for item in acls:
            if not isinstance(item, dict) or not all(isinstance(item.get(key), str) for key in _ENTRY_KEYS):
                raise MalformedZNode("an ACL entry lacks principal, permissionType, operation or host")
            entries.add(AccessControlEntry(item["principal"], item["host"], item["operation"], item["permissionType"]))
        return frozenset(entries)


class AclChangeZNode:
    """``/kafka-acl-changes/acl_changes_<seq>`` (literal) or ``/kafka-acl-extended-changes/acl_changes_<seq>``
    (prefixed), persistent sequential: names a resource pattern whose ACLs changed."""

    LITERAL_ROOT: Final = "/kafka-acl-changes"
    PREFIXED_ROOT: Final = "/kafka-acl-extended-changes"
    NAME_PREFIX: Final = "acl_changes_"

    @staticmethod
    def root(pattern_type: PatternType) -> str:
        return AclChangeZNode.PREFIXED_ROOT if pattern_type is PatternType.PREFIXED else AclChangeZNode.LITERAL_ROOT

    @staticmethod
    def prefix(pattern_type: PatternType) -> str:
        """Where a notification for a pattern of this type is created (ZooKeeper appends the sequence)."""
        return f"{AclChangeZNode.root(pattern_type)}/{AclChangeZNode.NAME_PREFIX}"

    @staticmethod
    def encode(pattern: ResourcePattern) -> bytes:
        """Exactly what a broker's ``AclAuthorizer`` writes (``LiteralAclChangeStore``, ``ExtendedAclChangeStore``)."""
        resource_type = java_enum_name(pattern.resource_type)
        if pattern.pattern_type is PatternType.LITERAL:
            return f"{resource_type}:{pattern.name}".encode()
        doc = {"version": 1, "resourceType": resource_type, "name": pattern.name, "patternType": "PREFIXED"}
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @staticmethod
    def decode(data: bytes, queue: PatternType) -> ResourcePattern:
        """``queue``: the pattern type of the queue the notification was found in (its format)."""
        try:
            text = data.decode("utf-8")
            if queue is PatternType.LITERAL:
                resource_type, sep, name = text.partition(":")
                if not sep or not resource_type or not name:
                    raise MalformedZNode("literal ACL change is not <ResourceType>:<name>")
                return ResourcePattern(_folder_name(resource_type), name, PatternType.LITERAL)
            doc = json.loads(text)
            if (
                not isinstance(doc, dict)
                or not isinstance(doc.get("resourceType"), str)
                or not isinstance(doc.get("name"), str)
            ):
                raise MalformedZNode("prefixed ACL change lacks resourceType or name")
            pattern_type = doc.get("patternType", "PREFIXED")
            if not isinstance(pattern_type, str):
                raise MalformedZNode("prefixed ACL change has a patternType that is not a name")
            # PatternType.fromString reads the name case-insensitively, as ResourceType.fromString does.
            return ResourcePattern(_folder_name(doc["resourceType"]), doc["name"], PatternType(pattern_type.upper()))
        except MalformedZNode:
            raise
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
            raise MalformedZNode("unreadable ACL change notification") from exc
