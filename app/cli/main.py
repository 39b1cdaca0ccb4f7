"""The ``kts`` command: one parser with every audience's commands, and one table from failures to exit codes.

Exit codes: 0 success, 1 refused or failed, 2 bad usage or configuration. Registering a command imports
only its options; its handler imports what it needs when it runs, so ``kts --help`` and the client
commands never load the server, Spark or the audit database.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from app.cli import audit_export, audit_report, lockout
from app.cli.client import acls, audit, cluster, tokens, users
from app.cli.server import commands as server
from app.cli.sidecar import command as sidecar
from app.version import kts_version

# (module, exception class, exit code, the line printed after "kts: "), first match wins. Named, not
# imported: an exception whose module was never imported cannot have been raised, and importing the audit
# database's SchemaBehind here would load SQLAlchemy for every client command.
FAILURES: tuple[tuple[str, str, int, Callable[[BaseException], str]], ...] = (
    ("app.cli.client.http_client", "KtsClientError", 1, str),
    ("app.cli.client.acls", "RemovalNotConfirmed", 1, str),
    ("app.settings", "ConfigError", 2, lambda exc: f"configuration error: {exc}"),
    ("app.domain.errors", "StoreUnavailable", 1, lambda exc: str(getattr(exc, "message", exc))),
    ("app.domain.secret_fingerprint", "SecretKeyMismatch", 1, str),
    ("app.storage.audit.migrations", "SchemaBehind", 2, str),
    ("app.cli.server.listener_check", "ListenerUnavailable", 2, str),
    ("app.cli.server.kafka_broker.release", "KafkaUnavailable", 1, str),
    ("app.cli.server.kafka_broker.broker", "BrokerFailed", 1, str),
    ("app.cli.server.kafka_broker.tools", "UnknownTool", 2, str),
    ("app.cli.server.kafka_tools", "DevStackMissing", 2, str),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kts", description="A token authority for Apache Kafka.")
    commands = parser.add_subparsers(dest="command", required=True)
    server.add_parsers(commands)
    for command in (tokens, acls, users, audit, cluster, sidecar, audit_export, audit_report, lockout):
        command.add_parser(commands)
    for each in (parser, *commands.choices.values()):
        each.add_argument("--version", action="version", version=f"kts {kts_version()}", help="print the version")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        failure = _failure(exc)
        if failure is None:
            raise
        code, message = failure
        print(f"kts: {message}", file=sys.stderr)
        return code


def _failure(exc: Exception) -> tuple[int, str] | None:
    for module_name, class_name, code, message in FAILURES:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(exc, getattr(module, class_name)):
            return code, message(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
