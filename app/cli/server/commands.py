"""``kts serve`` and ``kts dev``: their options, and handlers that import the server only when they run."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the service")
    serve.add_argument("--config", type=Path, help="properties file (Kafka key names plus kts keys)")
    serve.set_defaults(handler=run_serve)
    dev = commands.add_parser(
        "dev", help="run the local stack: embedded ZooKeeper, admin user, service (and a Kafka broker: --kafka)"
    )
    dev.add_argument("--port", type=int, default=8080)
    dev.add_argument("--data-dir", type=Path, default=Path(".kts-dev"))
    dev.add_argument("--config", type=Path, help="optional properties file")
    dev.add_argument(
        "--kafka",
        action="store_true",
        help="also run a Kafka 3.9 broker (ZooKeeper mode) that takes kts's tokens; its jars come from Maven "
        "Central once (needs java and mvn)",
    )
    dev.add_argument("--kafka-port", type=int, default=9092, help="the broker's port on 127.0.0.1 (default: 9092)")
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

    return dev(
        args.port, args.data_dir, args.config, Console(stderr=True), kafka_port=args.kafka_port if args.kafka else None
    )
