"""``kts serve`` and ``kts dev``: their options, and handlers that import the server only when they run."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the service")
    serve.add_argument("--config", type=Path, help="properties file (Kafka key names plus kts keys)")
    serve.set_defaults(handler=run_serve)
    dev = commands.add_parser("dev", help="run the local stack: embedded ZooKeeper, admin user, service")
    dev.add_argument("--port", type=int, default=8080)
    dev.add_argument("--data-dir", type=Path, default=Path(".kts-dev"))
    dev.add_argument("--config", type=Path, help="optional properties file")
    dev.set_defaults(handler=run_dev)


def run_serve(args: argparse.Namespace) -> int:
    from app.cli.server.serve import prepare_audit_database, serve
    from app.runtime import check_cluster
    from app.settings import load_settings

    settings = load_settings(args.config)
    prepare_audit_database(settings)
    check_cluster(settings)
    return serve(settings)


def run_dev(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.cli.server.dev import dev

    return dev(args.port, args.data_dir, args.config, Console(stderr=True))
