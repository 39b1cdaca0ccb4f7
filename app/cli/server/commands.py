"""``kts serve`` and ``kts dev``: their options, and handlers that import the server only when they run."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.server import kafka_tools
from app.cli.server.collector import collector_paused_for_startup
from app.cli.server.kafka_broker.release import KRAFT_RELEASE


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the service")
    serve.add_argument("--config", type=Path, help="properties file (Kafka key names plus kts keys)")
    serve.set_defaults(handler=run_serve)
    dev = commands.add_parser(
        "dev",
        help="run the local stack: embedded ZooKeeper, admin user, service (and a Kafka broker: --kafka; or a KRaft "
        "broker instead of ZooKeeper: --kraft)",
    )
    dev.add_argument("--port", type=port_number, default=8080, help="the port on 127.0.0.1 to serve on")
    dev.add_argument("--data-dir", type=Path, default=Path(".kts-dev"))
    dev.add_argument("--config", type=Path, help="optional properties file")
    stacks = dev.add_mutually_exclusive_group()
    stacks.add_argument(
        "--kafka",
        action="store_true",
        help="also run a Kafka 3.9 broker (ZooKeeper mode) that takes kts's tokens; its jars come from Maven "
        "Central once (needs java and mvn)",
    )
    stacks.add_argument(
        "--kraft",
        action="store_true",
        help=f"run a Kafka {KRAFT_RELEASE} broker in KRaft mode instead of ZooKeeper, kts on its bootstrap.servers "
        "as its own principal User:kts (jars from Maven Central once; needs java and mvn)",
    )
    dev.add_argument(
        "--kafka-port", type=port_number, default=9092, help="the broker's port on 127.0.0.1 (default: 9092)"
    )
    dev.set_defaults(handler=run_dev)
    kafka_tools.add_parser(commands)


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1 to 65535)")
    return port


def run_serve(args: argparse.Namespace) -> int:
    with collector_paused_for_startup():
        return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    from app.backend_selection import check_cluster
    from app.backends import load_settings
    from app.cli.server.listener_check import check_bindable
    from app.cli.server.logging_config import configure_logging
    from app.cli.server.serve import prepare_audit_database, serve

    settings = load_settings(args.config)
    # The listeners first: a busy port is one line and exit code 2 before the database or ZooKeeper is touched.
    check_bindable(settings.listener_host, settings.listener_port, named_by="http.listeners")
    if settings.http_management_listeners:
        check_bindable(settings.management_host, settings.management_port, named_by="http.management.listeners")
    prepare_audit_database(settings)
    # Logging before the cluster check, so that its wait for unreachable brokers is shown as it goes.
    configure_logging(settings.log_format or "json")
    check_cluster(settings)
    return serve(settings)


def run_dev(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.cli.server.dev import dev

    return dev(
        args.port,
        args.data_dir,
        args.config,
        Console(stderr=True, soft_wrap=True),
        kafka_port=args.kafka_port if args.kafka or args.kraft else None,
        kraft=args.kraft,
    )
