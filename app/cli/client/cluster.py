"""``kts cluster status``: which backend a running kts uses to reach the Kafka cluster, and (with ZooKeeper) where
the cluster stands in its migration from ZooKeeper to KRaft, from ``GET /readyz`` (no login needed).

    kts cluster status --server https://kts.example.com:8443
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from app.cli.client.arguments import add_connection_options, add_output_option
from app.cli.client.output import to_json


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "cluster",
        help="how kts reaches the Kafka cluster, and its migration to KRaft",
        description="Show how a running kts reaches the Kafka cluster (its backend) and where the cluster stands "
        "in its migration from ZooKeeper to KRaft, as GET /readyz reports it. Needs no credentials.",
    )
    parser.add_argument(
        "what",
        choices=["status", "prepare-migration"],
        help="status: the replica's view of the cluster; prepare-migration (server side, before a migration to "
        "KRaft): make kts's principal on bootstrap.servers a renewer of every live token",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help="prepare-migration: the properties file of kts serve"
    )
    add_output_option(parser)
    add_connection_options(parser)
    parser.set_defaults(handler=run, usage=parser)


def run(args: argparse.Namespace) -> int:
    if args.what == "prepare-migration":
        from app.cli.prepare_migration import run as prepare

        return prepare(args)
    from app.cli.client.command_config import server_url
    from app.cli.client.connection import load_config
    from app.cli.client.http_client import KtsClient

    with KtsClient(server_url(args.server, os.environ), load_config(args)) as client:
        body = client.readiness()
    print(to_json(body) if args.output == "json" else status_text(body))
    return 0


def status_text(body: dict[str, Any]) -> str:
    """The replica's readiness, its backend and its view of the cluster's migration, one fact a line."""
    lines = [("replica", _replica(body)), ("backend", str(body.get("backend") or "-"))]
    migration = body.get("migration")
    if isinstance(migration, dict):
        lines += [
            ("phase", f"{migration.get('phase')} (writes {migration.get('writes')})"),
            ("reason", str(migration.get("reason"))),
            ("cluster id", str(migration.get("clusterId") or "-")),
            ("controller", _controller(migration.get("controller"))),
            ("KRaft metadata offset", _optional(migration.get("kraftMetadataOffset"))),
            ("brokers in ZooKeeper", str(migration.get("zookeeperBrokers"))),
        ]
        if migration.get("tokensKtsCannotRenew") is not None:
            lines.append(("tokens kts cannot renew after a switch", str(migration["tokensKtsCannotRenew"])))
    width = max(len(name) for name, _ in lines)
    return "\n".join(f"{name + ':':<{width + 1}} {value}" for name, value in lines)


def _replica(body: dict[str, Any]) -> str:
    if "error" in body:
        return f"not ready: {body.get('message')}"
    return str(body.get("status"))


def _controller(controller: object) -> str:
    if not isinstance(controller, dict):
        return "-"
    epoch = controller.get("kraftControllerEpoch")
    if isinstance(epoch, int) and epoch >= 0:
        return f"KRaft controller {controller.get('nodeId')} (KRaft epoch {epoch})"
    return f"broker {controller.get('nodeId')} (ZooKeeper mode)"


def _optional(value: object) -> str:
    return "-" if value is None else str(value)
