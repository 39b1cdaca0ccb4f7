"""ACL znode data and ACL change notifications, in the formats of Kafka's ``AclAuthorizer``.

- resource znode: ``{"version":1,"acls":[{"principal":..,"permissionType":..,"operation":..,"host":..}]}``
- literal change: the text ``<ResourceType>:<name>`` (e.g. ``User:User:alice``)
- prefixed change: ``{"version":1,"resourceType":..,"name":..,"patternType":"PREFIXED"}``
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern

_ENTRY_KEYS = ("principal", "permissionType", "operation", "host")


class AclCodecError(ValueError):
    pass


def encode_entries(entries: Iterable[AccessControlEntry]) -> bytes:
    acls = [
        {"principal": e.principal, "permissionType": e.permission, "operation": e.operation, "host": e.host}
        for e in sorted(entries)
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_entries(data: bytes) -> frozenset[AccessControlEntry]:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AclCodecError("ACL znode is not UTF-8 JSON") from exc
    acls = doc.get("acls") if isinstance(doc, dict) else None
    if not isinstance(acls, list):
        raise AclCodecError("ACL znode has no acls list")
    entries = set()
    for item in acls:
        if not isinstance(item, dict) or not all(isinstance(item.get(key), str) for key in _ENTRY_KEYS):
            raise AclCodecError("an ACL entry lacks principal, permissionType, operation or host")
        entries.add(AccessControlEntry(item["principal"], item["host"], item["operation"], item["permissionType"]))
    return frozenset(entries)


def encode_change(pattern: ResourcePattern) -> bytes:
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type}:{pattern.name}".encode()
    doc = {"version": 1, "resourceType": pattern.resource_type, "name": pattern.name, "patternType": "PREFIXED"}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_change(data: bytes, *, prefixed: bool) -> ResourcePattern:
    try:
        text = data.decode("utf-8")
        if not prefixed:
            resource_type, sep, name = text.partition(":")
            if not sep or not resource_type or not name:
                raise AclCodecError("literal ACL change is not <ResourceType>:<name>")
            return ResourcePattern(resource_type, name, PatternType.LITERAL)
        doc = json.loads(text)
        if (
            not isinstance(doc, dict)
            or not isinstance(doc.get("resourceType"), str)
            or not isinstance(doc.get("name"), str)
        ):
            raise AclCodecError("prefixed ACL change lacks resourceType or name")
        return ResourcePattern(doc["resourceType"], doc["name"], PatternType(doc.get("patternType", "PREFIXED")))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        if isinstance(exc, AclCodecError):
            raise
        raise AclCodecError("unreadable ACL change notification") from exc
