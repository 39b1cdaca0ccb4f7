"""The ``kts`` command. Exit codes: 0 success, 1 refused or failed, 2 bad usage or configuration."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from app.cli import acls, audit_export, audit_report, sidecar, tokens
from app.cli.http_client import KtsClientError
from app.domain.errors import StoreUnavailable
from app.settings import ConfigError, load_settings
from app.storage.audit.migrations import SchemaBehind


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kts", description="A token authority for Apache Kafka.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the service")
    serve.add_argument("--config", type=Path, help="properties file (Kafka key names plus kts keys)")
    dev = commands.add_parser("dev", help="run the local stack: embedded ZooKeeper, admin user, service")
    dev.add_argument("--port", type=int, default=8080)
    dev.add_argument("--data-dir", type=Path, default=Path(".kts-dev"))
    dev.add_argument("--config", type=Path, help="optional properties file")
    for command in (tokens, acls, sidecar, audit_export, audit_report):
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(stderr=True)
    try:
        if args.command == "serve":
            from app.cli.serve import prepare_audit_database, serve
            from app.runtime import check_zookeeper

            settings = load_settings(args.config)
            prepare_audit_database(settings)
            check_zookeeper(settings)
            return serve(settings)
        if args.command == "dev":
            from app.cli.dev import dev

            return dev(args.port, args.data_dir, args.config, console)
        if hasattr(args, "handler"):  # tokens, acls, sidecar and the audit analytics commands
            return int(args.handler(args))
    except KtsClientError as exc:
        print(f"kts: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        print(f"kts: configuration error: {exc}", file=sys.stderr)
        return 2
    except StoreUnavailable as exc:
        print(f"kts: {exc.message}", file=sys.stderr)
        return 1
    except SchemaBehind as exc:
        print(f"kts: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
