"""The text Kafka 3.x's tools print, reproduced exactly, so scripts written for them read kts's output.

- ``kafka-acls.sh`` (AclCommand): ``Adding ACLs for resource `ResourcePattern(...)`: `` blocks, ``Current ACLs
  for resource ...`` blocks and the ``--remove`` confirmation, with Kafka's Java ``toString`` of
  ``ResourcePattern``, ``ResourcePatternFilter`` (which also prints ``ResourcePattern(``) and
  ``AccessControlEntry``, and its enum names (``USER``, ``CREATE_TOKENS``, ``ALLOW``);
- ``kafka-delegation-tokens.sh`` (DelegationTokenCommand): the ``Calling ... operation`` lines and the
  fixed-width token table (``%-15s %-30s ...``);
- ``kafka-configs.sh --entity-type users`` (ConfigCommand): the SCRAM credential lines.

Kafka prints a Scala ``Set``/``Map`` in hash order; kts sorts, so the same ACLs always print the same way.
Each function returns the text without its last newline (the command prints it with one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

ACL_ENTRY_FIELDS = ("principal", "host", "operation", "permissionType")
PATTERN_FIELDS = ("resourceType", "resourceName", "patternType")
TOKEN_COLUMNS = ("TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE")
TOKEN_WIDTHS = (15, 30, 15, 15, 25, 15, 15, 15)
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

Pattern = tuple[str, str, str]  # (resourceType, resourceName, patternType) as the kts API names them
Entry = tuple[str, str, str, str]  # (principal, host, operation, permissionType)


def java_enum(name: str) -> str:
    """kts's API names to Kafka's enum constants: ``CreateTokens`` -> ``CREATE_TOKENS``, ``User`` -> ``USER``."""
    return _WORD_BOUNDARY.sub("_", name).upper()


def resource_pattern(pattern: Pattern) -> str:
    resource_type, name, pattern_type = pattern
    return f"ResourcePattern(resourceType={java_enum(resource_type)}, name={name}, patternType={pattern_type})"


def access_control_entry(entry: Entry) -> str:
    principal, host, operation, permission = entry
    return (
        f"(principal={principal}, host={host}, operation={java_enum(operation)}, "
        f"permissionType={java_enum(permission)})"
    )


def _entries(entries: Iterable[Entry]) -> str:
    """Scala's ``acls.map("\\t" + _).mkString(Newline)``, sorted."""
    return "\n".join("\t" + access_control_entry(entry) for entry in sorted(set(entries)))


def _block(heading: str, entries: Iterable[Entry]) -> str:
    # println(s"$heading: $Newline ${entries} $Newline"): a space after each newline and before the last.
    return f"{heading}: \n {_entries(entries)} \n"


def adding_block(pattern: Pattern, entries: Iterable[Entry]) -> str:
    return _block(f"Adding ACLs for resource `{resource_pattern(pattern)}`", entries)


def current_acls(found: Iterable[Mapping[str, object]]) -> str:
    """``Current ACLs for resource ...`` blocks, one per resource pattern found; nothing when none."""
    by_pattern: dict[Pattern, set[Entry]] = {}
    for acl in found:
        pattern: Pattern = (str(acl["resourceType"]), str(acl["resourceName"]), str(acl["patternType"]))
        entry: Entry = (str(acl["principal"]), str(acl["host"]), str(acl["operation"]), str(acl["permissionType"]))
        by_pattern.setdefault(pattern, set()).add(entry)
    return "\n".join(
        _block(f"Current ACLs for resource `{resource_pattern(pattern)}`", by_pattern[pattern])
        for pattern in sorted(by_pattern)
    )


def principal_heading(principal: str) -> str:
    return f"ACLs for principal `{principal}`"


def removal_question(pattern_filter: Pattern, entries: Sequence[Entry]) -> str:
    """The question ``kafka-acls.sh --remove`` asks before it removes (``ResourcePatternFilter.toString``)."""
    where = f"resource filter `{resource_pattern(pattern_filter)}`"
    if not entries:
        return f"Are you sure you want to delete all ACLs for {where}? (y/n)"
    return f"Are you sure you want to remove ACLs: \n {_entries(entries)} \n from {where}? (y/n)"


# kafka-delegation-tokens.sh


def java_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


def create_calling(renewers: Sequence[str], max_life_time_ms: int) -> str:
    return (
        f"Calling create token operation with renewers :{java_list(renewers)} , "
        f"max-life-time-period :{max_life_time_ms}"
    )


def created_line(token_id: str) -> str:
    return f"Created delegation token with tokenId : {token_id}"


def describe_calling(owners: Sequence[str] | None) -> str:
    if not owners:
        return "Calling describe token operation for current user."
    return f"Calling describe token operation for owners :{java_list(owners)}"


def total_line(count: int) -> str:
    return f"Total number of tokens : {count}"


def renew_calling(hmac_shown: str, period_ms: int) -> str:
    return f"Calling renew token operation with hmac :{hmac_shown} , renew-time-period :{period_ms}"


def expire_calling(hmac_shown: str, period_ms: int) -> str:
    return f"Calling expire token operation with hmac :{hmac_shown} , expire-time-period : {period_ms}"


def completed_line(action: str, expiry_date: str) -> str:
    return f"Completed {action} operation. New expiry date : {expiry_date}"


def token_row(cells: Sequence[str]) -> str:
    """One line of Kafka's ``%-15s %-30s %-15s %-15s %-25s %-15s %-15s %-15s`` (trailing spaces kept)."""
    return " ".join(cell.ljust(width) for cell, width in zip(cells, TOKEN_WIDTHS, strict=True))


def token_table(rows: Sequence[Sequence[str]]) -> str:
    """``printToken``: a newline, the header, then ``"\\n" + row`` and a newline for each token."""
    text = "\n" + token_row(TOKEN_COLUMNS)
    for row in rows:
        text += "\n" + token_row(row) + "\n"
    return text.removesuffix("\n")


# kafka-configs.sh --entity-type users


def scram_description(user: str, credentials: Sequence[tuple[str, int]]) -> str:
    described = ", ".join(f"{mechanism}=iterations={iterations}" for mechanism, iterations in credentials)
    return f"SCRAM credential configs for user-principal '{user}' are {described}"


def scram_missing(user: str) -> str:
    return (
        f"Error retrieving SCRAM credential configs for user-principal '{user}': "
        "ResourceNotFoundException: Attempt to describe a user credential that does not exist"
    )


def config_updated(user: str) -> str:
    return f"Completed updating config for user {user}."
