"""``kts users``: SCRAM credentials as ``kafka-configs.sh --entity-type users`` manages them, over the kts API.

    kts users --entity-type users --entity-name alice --alter \\
        --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'
    kts users --entity-name alice --alter --delete-config SCRAM-SHA-512
    kts users --entity-name alice --describe

``--user alice`` is kafka-configs.sh's short form of ``--entity-type users --entity-name alice``. Only SCRAM
configs exist here (no quotas), and ``--describe`` needs a user name (kts does not list every user). The
output is kafka-configs.sh's lines; a password never appears in output or errors.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from app.cli.client import kafka_text
from app.cli.client.arguments import add_actions, add_connection_options, add_output_option
from app.cli.client.output import to_json
from app.cli.client.runner import run_client_command
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism

if TYPE_CHECKING:
    from app.cli.client.http_client import KtsClient

ENTITY_TYPE = "users"
_MECHANISMS = "|".join(re.escape(mechanism.value) for mechanism in Mechanism)
# kafka-configs.sh's syntax: comma-separated key=value, a value in [...] holding its own key=value pairs.
_SCRAM_CONFIG = re.compile(rf"({_MECHANISMS})=\[([^\]]*)\]")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "users",
        help="add, delete or describe SCRAM credentials (as kafka-configs.sh --entity-type users)",
        description="Manage users' SCRAM credentials as kafka-configs.sh --entity-type users does.",
    )
    add_actions(parser, {"alter": "add or delete configs", "describe": "describe a user's SCRAM credentials"})
    parser.add_argument("--entity-type", choices=(ENTITY_TYPE,), default=ENTITY_TYPE, help="users (the only one)")
    parser.add_argument("--entity-name", metavar="USER", help="the user's name")
    parser.add_argument("--user", metavar="USER", help="same as --entity-type users --entity-name USER")
    parser.add_argument(
        "--add-config",
        metavar="CONFIGS",
        help="'SCRAM-SHA-512=[iterations=8192,password=secret]' (comma-separated; iterations default 4096)",
    )
    parser.add_argument("--delete-config", metavar="NAMES", help="SCRAM-SHA-512 and/or SCRAM-SHA-256, comma-separated")
    add_output_option(parser)
    add_connection_options(parser)
    parser.set_defaults(handler=run, usage=parser)


def user_name(args: argparse.Namespace) -> str | None:
    name: str | None = args.user or args.entity_name
    return name


def parse_add_config(text: str) -> list[tuple[str, str, int]]:
    """``(mechanism, password, iterations)`` for each SCRAM entry. Raises ValueError with a message that never
    repeats the text (it holds passwords)."""
    entries: list[tuple[str, str, int]] = []
    rest = text.strip()
    while rest:
        found = _SCRAM_CONFIG.match(rest)
        if found is None:
            raise ValueError(
                "--add-config takes SCRAM-SHA-256=[...] or SCRAM-SHA-512=[...] entries such as "
                "'SCRAM-SHA-512=[iterations=8192,password=...]'"
            )
        values: dict[str, str] = {}
        for pair in found.group(2).split(","):
            key, separator, value = pair.partition("=")
            if not separator or key.strip() not in ("iterations", "password"):
                raise ValueError(f"{found.group(1)}: only iterations=N and password=... go inside [...]")
            values[key.strip()] = value
        if not values.get("password"):
            raise ValueError(f"{found.group(1)}: password=... is required")
        try:
            iterations = int(values.get("iterations", MIN_ITERATIONS))
        except ValueError:
            raise ValueError(f"{found.group(1)}: iterations must be a whole number") from None
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"{found.group(1)}: iterations must be from {MIN_ITERATIONS} to {MAX_ITERATIONS}")
        entries.append((found.group(1), values["password"], iterations))
        rest = rest[found.end() :].removeprefix(",").strip()
    return entries


def parse_delete_config(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in {mechanism.value for mechanism in Mechanism}]
    if unknown or not names:
        raise ValueError("--delete-config takes SCRAM-SHA-256 and/or SCRAM-SHA-512")
    return names


def validate(args: argparse.Namespace) -> str | None:
    if args.user and args.entity_name and args.user != args.entity_name:
        return "give the user once: --user or --entity-name"
    if user_name(args) is None:
        return f"--{args.action} needs --entity-name USER (or --user USER)"
    if args.action == "describe" and (args.add_config or args.delete_config):
        return "--add-config and --delete-config go with --alter"
    if args.action == "alter":
        if not (args.add_config or args.delete_config):
            return "--alter needs --add-config or --delete-config"
        try:
            added = {mechanism for mechanism, _, _ in parse_add_config(args.add_config or "")}
            deleted = set(parse_delete_config(args.delete_config)) if args.delete_config else set()
        except ValueError as exc:
            return str(exc)
        if added & deleted:
            return "a mechanism cannot be both added and deleted"
    return None


def run(args: argparse.Namespace) -> int:
    return run_client_command(args, validate, act)


def act(client: KtsClient, args: argparse.Namespace) -> str:
    user = user_name(args)
    assert user is not None  # validate() made sure
    json = args.output == "json"
    if args.action == "describe":
        described = client.describe_credentials(user)
        if json:
            return to_json(described)
        credentials = [(item["mechanism"], int(item["iterations"])) for item in described["credentials"]]
        return kafka_text.scram_description(user, credentials) if credentials else kafka_text.scram_missing(user)
    results = []
    for mechanism in parse_delete_config(args.delete_config) if args.delete_config else []:
        results.append(client.delete_credential(user, mechanism))
    for mechanism, password, iterations in parse_add_config(args.add_config or ""):
        results.append(client.set_credential(user, mechanism, password, iterations))
    return to_json({"changes": results}) if json else kafka_text.config_updated(user)
