"""Options every client command shares (``--server`` alias ``--bootstrap-server``, ``--command-config``,
``--output``, one ``--<action>``)
and argument types.

Cheap to import (argparse and the domain's principal rules only): every command registers these when the
``kts`` parser is built, including for ``kts --help``.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import re
from pathlib import Path

from app.domain.errors import InvalidPrincipal
from app.domain.principal import KafkaPrincipal

DEFAULT_SERVER = "http://127.0.0.1:8080"
SERVER_ENV = "KTS_SERVER"
COMMAND_CONFIG_ENV = "KTS_COMMAND_CONFIG"
OUTPUTS = ("table", "json")
_HMAC = re.compile(r"[A-Za-z0-9+/]{86}==")


def add_actions(parser: argparse.ArgumentParser, actions: dict[str, str]) -> None:
    """Exactly one ``--<action>`` flag of ``actions`` (name: help), as Kafka's tools take it; ``args.action``."""
    group = parser.add_mutually_exclusive_group(required=True)
    for action, help_text in actions.items():
        group.add_argument(f"--{action}", dest="action", action="store_const", const=action, help=help_text)


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--server",
        "--bootstrap-server",
        dest="server",
        metavar="URL",
        help=f"the kts service URL (default: ${SERVER_ENV}, else {DEFAULT_SERVER}); "
        "--bootstrap-server is the same option, for Kafka tools' habits",
    )
    group.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="properties file with username/password, token.id/token.hmac, a Kafka client's sasl.jaas.config, "
        f"and/or ssl.certfile, ssl.keyfile, ssl.cafile (default: ${COMMAND_CONFIG_ENV})",
    )


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", choices=OUTPUTS, default="table", help="table (as Kafka's tools print) or json (default: table)"
    )


def principal(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text.strip()))
    except InvalidPrincipal as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def hmac_text(text: str) -> str:
    """A token HMAC as Kafka's tools take it; the error never repeats the value (it is a password)."""
    value = text.strip()
    try:
        valid = bool(_HMAC.fullmatch(value)) and len(base64.b64decode(value, validate=True)) == 64
    except (binascii.Error, ValueError):
        valid = False
    if not valid:
        raise argparse.ArgumentTypeError("must be the 88-character standard base64 HMAC of a token")
    return value


def milliseconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of milliseconds") from None
    if not -(2**63) <= value < 2**63:
        raise argparse.ArgumentTypeError("is out of range")
    return value
