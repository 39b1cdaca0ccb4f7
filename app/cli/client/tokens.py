"""``kts tokens``: kafka-delegation-tokens.sh over the kts API, with the same options and table.

Differences from Kafka's tool, on purpose: ``--max-life-time-period``, ``--renew-time-period`` and
``--expiry-time-period`` default to -1 (the server's setting, or now for expire) instead of being required;
describe without ``--owner-principal`` lists every token the caller may see; renew and expire print the HMAC
they were given as ``<hidden>`` in Kafka's "Calling ... operation" line, and describe never prints HMACs at
all (the service does not disclose them after create, so the HMAC column shows ``<hidden>``). Create prints
the HMAC, as Kafka does: it is the only time anyone can learn it. Otherwise the lines and the fixed-width
table are Kafka 3.x's (``kafka_text``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING

from app.cli.client import kafka_text
from app.cli.client.arguments import (
    add_actions,
    add_connection_options,
    add_output_option,
    hmac_text,
    milliseconds,
    principal,
)
from app.cli.client.output import kafka_date, to_json
from app.cli.client.runner import run_client_command

if TYPE_CHECKING:
    from app.cli.client.http_client import ExpiryJson, KtsClient, TokenJson

HIDDEN_HMAC = "<hidden>"
# Options each action refuses, as kafka-delegation-tokens.sh checks them (plus --renewer-principal on describe).
_INVALID = {
    "create": ("hmac", "renew_time_period", "expiry_time_period"),
    "renew": ("renewer_principal", "max_life_time_period", "expiry_time_period", "owner_principal"),
    "expire": ("renewer_principal", "max_life_time_period", "renew_time_period", "owner_principal"),
    "describe": ("renewer_principal", "max_life_time_period", "renew_time_period", "expiry_time_period", "hmac"),
    "revoke": ("renewer_principal", "max_life_time_period", "renew_time_period", "expiry_time_period", "hmac"),
}
_REQUESTER_ACTIONS = ("revoke",)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "tokens",
        help="create, renew, expire or describe delegation tokens (as kafka-delegation-tokens.sh)",
        description="Create, renew, expire or describe Kafka delegation tokens, as kafka-delegation-tokens.sh.",
    )
    add_actions(
        parser,
        {
            "create": "create a token",
            "renew": "renew a token",
            "expire": "expire a token",
            "describe": "describe visible tokens",
            "revoke": "expire every token of --owner-principal and/or --requester-principal at once "
            "(super users or Alter on the cluster)",
        },
    )
    parser.add_argument(
        "--owner-principal",
        action="append",
        type=principal,
        metavar="PRINCIPAL",
        help="create: the owner, if not yourself (needs CreateTokens on User:<owner>); "
        "describe: only tokens this principal owns, renews or requested (repeatable); "
        "revoke: the tokens this principal owns",
    )
    parser.add_argument(
        "--requester-principal",
        type=principal,
        metavar="PRINCIPAL",
        help="revoke: the tokens this principal requested (with --owner-principal: tokens matching both)",
    )
    parser.add_argument(
        "--renewer-principal", action="append", type=principal, metavar="PRINCIPAL", help="a renewer (repeatable)"
    )
    parser.add_argument(
        "--max-life-time-period", type=milliseconds, metavar="MS", help="create: maximum lifetime; -1: the server's"
    )
    parser.add_argument(
        "--renew-time-period", type=milliseconds, metavar="MS", help="renew: new expiry from now; -1: the server's"
    )
    parser.add_argument(
        "--expiry-time-period", type=milliseconds, metavar="MS", help="expire: expire after this; -1: now (default)"
    )
    parser.add_argument("--hmac", type=hmac_text, help="renew, expire: the token's HMAC (standard base64)")
    add_output_option(parser)
    add_connection_options(parser)
    parser.set_defaults(handler=run, usage=parser)


def validate(args: argparse.Namespace) -> str | None:
    """The usage error in these options, or None."""
    for option in _INVALID[args.action]:
        if getattr(args, option) is not None:
            return f"--{option.replace('_', '-')} cannot be used with --{args.action}"
    if args.action in ("renew", "expire") and args.hmac is None:
        return f"--{args.action} needs --hmac"
    if args.requester_principal is not None and args.action not in _REQUESTER_ACTIONS:
        return f"--requester-principal cannot be used with --{args.action}"
    if args.action in ("create", "revoke") and args.owner_principal and len(args.owner_principal) > 1:
        return f"--{args.action} takes at most one --owner-principal"
    if args.action == "revoke" and not args.owner_principal and args.requester_principal is None:
        return "--revoke needs --owner-principal, --requester-principal or both"
    return None


def run(args: argparse.Namespace) -> int:
    return run_client_command(args, validate, act)


def act(client: KtsClient, args: argparse.Namespace) -> str:
    json = args.output == "json"
    if args.action == "create":
        renewers = args.renewer_principal or []
        max_life_time_ms = _period(args.max_life_time_period)
        created = client.create_token(
            owner=args.owner_principal[0] if args.owner_principal else None,
            renewers=renewers,
            max_lifetime_ms=max_life_time_ms,
        )
        return to_json(created) if json else created_text(created, renewers, max_life_time_ms)
    if args.action == "renew":
        period = _period(args.renew_time_period)
        renewed = client.renew_token(args.hmac, period)
        return to_json(renewed) if json else expiry_text("renew", period, renewed)
    if args.action == "expire":
        period = _period(args.expiry_time_period)
        expired = client.expire_token(args.hmac, period)
        return to_json(expired) if json else expiry_text("expire", period, expired)
    if args.action == "revoke":
        revoked = client.revoke_tokens(
            owner=args.owner_principal[0] if args.owner_principal else None, requester=args.requester_principal
        )
        return to_json({"revoked": revoked}) if json else revoked_text(revoked)
    tokens = client.describe_tokens(args.owner_principal)
    return to_json({"tokens": tokens}) if json else described_text(tokens, args.owner_principal)


def token_table(tokens: Sequence[TokenJson], tz: tzinfo | None = None) -> str:
    """Kafka's describe table; the HMAC shows only for a token that carries one (just created)."""
    rows = [
        (
            token["tokenId"],
            token.get("hmac") or HIDDEN_HMAC,
            token["owner"],
            token["tokenRequester"],
            kafka_text.java_list(token["renewers"]),
            kafka_date(token["issueTimestamp"], tz),
            kafka_date(token["expiryTimestamp"], tz),
            kafka_date(token["maxTimestamp"], tz),
        )
        for token in tokens
    ]
    return kafka_text.token_table(rows)


def created_text(
    token: TokenJson, renewers: Sequence[str] = (), max_life_time_ms: int = -1, tz: tzinfo | None = None
) -> str:
    return "\n".join(
        (
            kafka_text.create_calling(renewers, max_life_time_ms),
            kafka_text.created_line(token["tokenId"]),
            token_table([token], tz),
        )
    )


def described_text(tokens: Sequence[TokenJson], owners: Sequence[str] | None = None, tz: tzinfo | None = None) -> str:
    return "\n".join((kafka_text.describe_calling(owners), kafka_text.total_line(len(tokens)), token_table(tokens, tz)))


def expiry_text(action: str, period_ms: int, result: ExpiryJson, tz: tzinfo | None = None) -> str:
    """Kafka's two lines; the HMAC given is a password and shows as ``<hidden>``."""
    calling = kafka_text.renew_calling if action == "renew" else kafka_text.expire_calling
    return "\n".join(
        (calling(HIDDEN_HMAC, period_ms), kafka_text.completed_line(action, kafka_date(result["expiryTimestamp"], tz)))
    )


def revoked_text(token_ids: Sequence[str]) -> str:
    return "\n".join([f"Revoked {len(token_ids)} delegation tokens.", *token_ids])


def _period(value: int | None) -> int:
    return -1 if value is None else value
