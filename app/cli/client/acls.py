"""``kts acls``: add, remove and list the token-related ACLs, in the spirit of kafka-acls.sh.

Resources are the ones kts manages: ``--user-principal`` (resource type User, KIP-373: who may create or
describe tokens for that user), ``--delegation-token`` and ``--cluster``. As in kafka-acls.sh,
``--operation`` defaults to All, hosts default to ``*``, ``--remove`` without principals removes every ACL on
the named resources, ``--list`` without resources lists every ACL, and ``--resource-pattern-type`` takes
``literal`` (default), ``prefixed``, or for list and remove the filters ``any`` (any pattern type, this exact
name) and ``match`` (every ACL that applies to the name: literal, the literal ``*``, and matching prefixes).
``--remove`` asks ``(y/n)`` for each resource filter, as kafka-acls.sh does, unless ``--force``; with a standard
input that is not a terminal it refuses instead of guessing. The output is kafka-acls.sh's (``kafka_text``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.cli.client import kafka_text
from app.cli.client.arguments import (
    add_actions,
    add_connection_options,
    add_output_option,
    principal,
)
from app.cli.client.output import to_json
from app.cli.client.runner import run_client_command
from app.domain.authorization import CLUSTER_RESOURCE_NAME, Operation

if TYPE_CHECKING:
    from app.cli.client.http_client import AclJson, KtsClient

PATTERN_TYPES = ("literal", "prefixed", "any", "match")
WILDCARD = "*"
ACL_FIELDS = ("resourceType", "resourceName", "patternType", "principal", "host", "operation", "permissionType")
_OPERATIONS = {operation.value.lower(): operation.value for operation in Operation}


class RemovalNotConfirmed(Exception):
    """``--remove`` could not ask (no terminal) and ``--force`` was not given."""


@dataclass(frozen=True, slots=True)
class Resource:
    resource_type: str
    name: str


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "acls",
        help="add, remove or list token ACLs (as kafka-acls.sh)",
        description="Add, remove or list the ACLs kts enforces (User, DelegationToken and Cluster resources).",
    )
    add_actions(parser, {action: f"{action} ACLs" for action in ("add", "remove", "list")})
    acl = parser.add_argument_group("ACL entries")
    acl.add_argument("--allow-principal", action="append", type=principal, metavar="PRINCIPAL", default=[])
    acl.add_argument("--deny-principal", action="append", type=principal, metavar="PRINCIPAL", default=[])
    acl.add_argument("--allow-host", action="append", metavar="HOST", default=[], help="default: * (any host)")
    acl.add_argument("--deny-host", action="append", metavar="HOST", default=[], help="default: * (any host)")
    acl.add_argument(
        "--operation",
        action="append",
        type=operation,
        default=[],
        help="CreateTokens, DescribeTokens, Describe, Alter or All (repeatable; default: All)",
    )
    acl.add_argument(
        "--principal", action="append", type=principal, default=[], help="--list: only ACLs of this principal"
    )
    resources = parser.add_argument_group("resources")
    resources.add_argument(
        "--user-principal",
        action="append",
        type=user_resource,
        metavar="PRINCIPAL",
        default=[],
        help="the User resource of this principal (KIP-373: CreateTokens, DescribeTokens)",
    )
    resources.add_argument("--delegation-token", action="append", metavar="TOKEN_ID", default=[])
    resources.add_argument("--cluster", action="store_true", help=f"the Cluster resource {CLUSTER_RESOURCE_NAME}")
    resources.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        choices=PATTERN_TYPES,
        help="literal (default) or prefixed; for --list and --remove also any or match",
    )
    parser.add_argument("--force", action="store_true", help="--remove: do not ask for confirmation")
    add_output_option(parser)
    add_connection_options(parser)
    parser.set_defaults(handler=run, usage=parser)


def operation(text: str) -> str:
    """Kafka's operation names in any case, with or without separators (CreateTokens, CREATE_TOKENS)."""
    key = text.strip().replace("_", "").replace("-", "").lower()
    if key not in _OPERATIONS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a Kafka ACL operation such as CreateTokens")
    return _OPERATIONS[key]


def user_resource(text: str) -> str:
    """A User resource is named after a principal (``User:joe``), or ``*`` for every user."""
    return WILDCARD if text.strip() == WILDCARD else principal(text)


def named_resources(args: argparse.Namespace) -> list[Resource]:
    resources = [Resource("User", name) for name in args.user_principal]
    resources += [Resource("DelegationToken", token_id) for token_id in args.delegation_token]
    if args.cluster:
        resources.append(Resource("Cluster", CLUSTER_RESOURCE_NAME))
    return resources


def validate(args: argparse.Namespace) -> str | None:
    resources = named_resources(args)
    pattern_type = args.resource_pattern_type
    entry_options = args.allow_principal or args.deny_principal or args.allow_host or args.deny_host
    if args.allow_host and not args.allow_principal:
        return "--allow-host needs --allow-principal"
    if args.deny_host and not args.deny_principal:
        return "--deny-host needs --deny-principal"
    if args.principal and args.action != "list":
        return "--principal filters --list; use --allow-principal or --deny-principal"
    if args.action == "add":
        if not resources:
            return "--add needs a resource: --user-principal, --delegation-token or --cluster"
        if not (args.allow_principal or args.deny_principal):
            return "--add needs --allow-principal or --deny-principal"
        if pattern_type in ("any", "match"):
            return "--add takes --resource-pattern-type literal or prefixed"
    if args.action == "remove" and not resources:
        return "--remove needs a resource: --user-principal, --delegation-token or --cluster"
    if args.action == "list" and (entry_options or args.operation):
        return "--list filters with --principal and resources only"
    return None


def entries(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    """``(principal, host, operation, permission)`` for every combination the options name."""
    operations = args.operation or [Operation.ALL.value]
    combos = []
    for permission, principals, hosts in (
        ("Allow", args.allow_principal, args.allow_host),
        ("Deny", args.deny_principal, args.deny_host),
    ):
        for who in principals:
            for host in hosts or [WILDCARD]:
                for op in operations:
                    combos.append((who, host, op, permission))
    return list(dict.fromkeys(combos))


def bindings_to_add(args: argparse.Namespace) -> list[AclJson]:
    pattern_type = (args.resource_pattern_type or "literal").upper()
    return [
        {
            "resourceType": resource.resource_type,
            "resourceName": resource.name,
            "patternType": pattern_type,
            "principal": who,
            "host": host,
            "operation": op,
            "permissionType": permission,
        }
        for resource in named_resources(args)
        for who, host, op, permission in entries(args)
    ]


def applies_to(acl: AclJson, name: str) -> bool:
    """Kafka's MATCH filter: the ACL is on this literal name, on the literal ``*``, or on a prefix of it."""
    if acl["patternType"] == "PREFIXED":
        return name.startswith(acl["resourceName"])
    return acl["resourceName"] in (name, WILDCARD)


def run(args: argparse.Namespace) -> int:
    return run_client_command(args, validate, act)


def act(client: KtsClient, args: argparse.Namespace) -> str:
    """kafka-acls.sh's output: what is added (or the removal question), then the current ACLs."""
    json = args.output == "json"
    if args.action == "add":
        bindings = bindings_to_add(args)
        added = [client.add_acl(binding) for binding in bindings]
        if json:
            return to_json({"acls": added})
        return _joined(*(_adding_blocks(bindings)), _current(client, args))
    if args.action == "remove":
        questions = removal_questions(args)
        confirmed = [pattern for pattern, question in questions if args.force or confirm(question, json)]
        deleted = remove(client, args, confirmed)
        if json:
            return to_json({"deleted": deleted})
        return _current(client, args)
    found = list_acls(client, args)
    if json:
        return to_json({"acls": found})
    if not args.principal:
        return kafka_text.current_acls(found)
    return _joined(
        *(
            _joined(
                kafka_text.principal_heading(who),
                kafka_text.current_acls(acl for acl in found if acl["principal"] == who),
            )
            for who in args.principal
        )
    )


def removal_questions(args: argparse.Namespace) -> list[tuple[Resource, str]]:
    """Kafka's question for each resource filter ``--remove`` names, before anything is removed."""
    pattern_type = (args.resource_pattern_type or "literal").upper()
    combos = entries(args)
    return [
        (resource, kafka_text.removal_question((resource.resource_type, resource.name, pattern_type), combos))
        for resource in named_resources(args)
    ]


def confirm(question: str, json_output: bool) -> bool:
    """Ask as kafka-acls.sh does (``y`` confirms). Nobody can answer a standard input that is not a terminal:
    refuse rather than guess, and say how to proceed."""
    if not sys.stdin.isatty():
        raise RemovalNotConfirmed(
            "--remove asks for confirmation, and standard input is not a terminal; add --force to remove without asking"
        )
    print(question, file=sys.stderr if json_output else sys.stdout, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() == "y"


def _adding_blocks(bindings: Sequence[AclJson]) -> list[str]:
    by_pattern: dict[tuple[str, str, str], list[tuple[str, str, str, str]]] = {}
    for binding in bindings:
        pattern = (binding["resourceType"], binding["resourceName"], binding["patternType"])
        entry = (binding["principal"], binding["host"], binding["operation"], binding["permissionType"])
        by_pattern.setdefault(pattern, []).append(entry)
    return [kafka_text.adding_block(pattern, by_pattern[pattern]) for pattern in sorted(by_pattern)]


def _current(client: KtsClient, args: argparse.Namespace) -> str:
    """Kafka lists the named resources' ACLs after an add or a remove."""
    return kafka_text.current_acls(list_acls(client, args, principals=False))


def _joined(*parts: str) -> str:
    return "\n".join(part for part in parts if part)


def list_acls(client: KtsClient, args: argparse.Namespace, *, principals: bool = True) -> list[AclJson]:
    resources = named_resources(args)
    who_filter: list[str | None] = list(args.principal) if principals and args.principal else [None]
    found: list[AclJson] = []
    if not resources:
        for who in who_filter:
            found += client.list_acls({"principal": who, "patternType": _pattern_filter(args, default=None)})
        return _unique(found)
    for resource in resources:
        for who in who_filter:
            found += _on_resource(client, resource, args, principal_filter=who)
    return _unique(found)


def remove(client: KtsClient, args: argparse.Namespace, resources: Sequence[Resource]) -> list[AclJson]:
    combos = entries(args)
    deleted: list[AclJson] = []
    for resource in resources:
        if args.resource_pattern_type == "match":
            # The API filters by exact name; MATCH is the ACLs that apply to the name, removed one by one.
            for acl in _on_resource(client, resource, args):
                if not combos or (acl["principal"], acl["host"], acl["operation"], acl["permissionType"]) in combos:
                    deleted += client.remove_acls({key: str(acl.get(key)) for key in ACL_FIELDS})
            continue
        selector = {
            "resourceType": resource.resource_type,
            "resourceName": resource.name,
            "patternType": _pattern_filter(args, default="LITERAL"),
        }
        if not combos:
            deleted += client.remove_acls(selector)
        for who, host, op, permission in combos:
            deleted += client.remove_acls(
                selector | {"principal": who, "host": host, "operation": op, "permissionType": permission}
            )
    return _unique(deleted)


def _on_resource(
    client: KtsClient, resource: Resource, args: argparse.Namespace, principal_filter: str | None = None
) -> list[AclJson]:
    if args.resource_pattern_type == "match":
        candidates = client.list_acls({"resourceType": resource.resource_type, "principal": principal_filter})
        return [acl for acl in candidates if applies_to(acl, resource.name)]
    return client.list_acls(
        {
            "resourceType": resource.resource_type,
            "resourceName": resource.name,
            "patternType": _pattern_filter(args, default="LITERAL"),
            "principal": principal_filter,
        }
    )


def _pattern_filter(args: argparse.Namespace, *, default: str | None) -> str | None:
    """The API's patternType filter: LITERAL or PREFIXED, or None for any."""
    chosen = args.resource_pattern_type
    if chosen is None:
        return default
    return chosen.upper() if chosen in ("literal", "prefixed") else None


def _unique(acls: Iterable[AclJson]) -> list[AclJson]:
    seen: dict[tuple[str, ...], AclJson] = {}
    for acl in acls:
        seen.setdefault(tuple(str(acl.get(key)) for key in ACL_FIELDS), acl)
    return list(seen.values())
