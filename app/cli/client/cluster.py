"""``kts cluster status``: whether a running kts is ready and, with credentials, how it reaches the Kafka cluster
(its backend), each dependency's state and (with ZooKeeper) where the cluster stands in its migration from
ZooKeeper to KRaft, from ``GET /v1/cluster/status`` (needs ``Describe`` on the cluster). Without credentials only
what ``GET /readyz`` tells anyone: a status and a reason word.

    kts cluster status --server https://kts.example.com:8443 --command-config ops.properties
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from app.cli.client.arguments import add_connection_options, add_output_option
from app.cli.client.output import to_json

DETAILS_HINT = "give --command-config (Describe on the cluster) for the backend, checks and migration"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "cluster",
        help="how kts reaches the Kafka cluster, and its migration to KRaft",
        description="Show whether a running kts is ready and, with credentials (--command-config; Describe on the "
        "cluster or a super user), how it reaches the Kafka cluster (its backend), each dependency's state and "
        "where the cluster stands in its migration from ZooKeeper to KRaft (GET /v1/cluster/status). Without "
        "credentials only what GET /readyz tells anyone: a status and a reason word.",
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

    config = load_config(args)
    logged_in = config.credential is not None or config.certfile is not None or config.identity is not None
    with KtsClient(server_url(args.server, os.environ), config) as client:
        body = client.cluster_status() if logged_in else client.readiness()
    print(to_json(body) if args.output == "json" else status_text(body))
    return 0


def status_text(body: dict[str, Any]) -> str:
    """The replica's readiness and, when the body has them, its backend and its view of the cluster's migration,
    one fact a line."""
    lines = [("replica", _replica(body))]
    if "backend" not in body:  # /readyz's answer: nothing more is told without credentials
        lines.append(("details", DETAILS_HINT))
    else:
        lines.append(("backend", str(body.get("backend") or "-")))
    facts = body.get("cluster")
    if isinstance(facts, dict):
        kraft = facts.get("mode") == "kraft"
        lines += [
            ("mode", "KRaft" if kraft else "ZooKeeper"),
            ("cluster id", str(facts.get("clusterId") or "-")),
            (
                "brokers" if body.get("backend") == "kafka" else "ZooKeeper ensemble",
                ", ".join(facts.get("nodes") or ()) or "-",
            ),
            ("metadata.version", str(facts.get("metadataVersion") or "-")),
            ("kts's principal", str(facts.get("principal") or "-")),
            ("secret", str(facts.get("secretCheck") or "-")),
        ]
        if kraft and not isinstance(body.get("migration"), dict):
            lines.append(("phase", "KRaft (no migration: kts reaches the brokers)"))
    migration = body.get("migration")
    if isinstance(migration, dict):
        lines += [
            ("phase", f"{migration.get('phase')} (writes {migration.get('writes')})"),
            ("reason", str(migration.get("reason"))),
            *([] if isinstance(facts, dict) else [("cluster id", str(migration.get("clusterId") or "-"))]),
            ("controller", _controller(migration.get("controller"))),
            ("KRaft metadata offset", _optional(migration.get("kraftMetadataOffset"))),
            ("brokers in ZooKeeper", str(migration.get("zookeeperBrokers"))),
        ]
        if migration.get("tokensKtsCannotRenew") is not None:
            lines.append(("tokens kts cannot renew after a switch", str(migration["tokensKtsCannotRenew"])))
    if "backend" in body:
        wrong = [f"{name}: {value}" for name, value in (body.get("checks") or {}).items() if value != "ok"]
        lines.append(("wrong", "; ".join(wrong) or "nothing"))
    width = max(len(name) for name, _ in lines)
    return "\n".join(f"{name + ':':<{width + 1}} {value}" for name, value in lines)


def _replica(body: dict[str, Any]) -> str:
    status, reason = body.get("status"), body.get("reason")
    if "error" in body or status == "not-ready":
        failing = [f"{name}: {value}" for name, value in (body.get("checks") or {}).items() if value != "ok"]
        return f"not ready: {'; '.join(failing) or reason or body.get('message')}"
    return str(status) if reason in (None, "ok") else f"{status} ({reason})"


def _controller(controller: object) -> str:
    if not isinstance(controller, dict):
        return "-"
    epoch = controller.get("kraftControllerEpoch")
    if isinstance(epoch, int) and epoch >= 0:
        return f"KRaft controller {controller.get('nodeId')} (KRaft epoch {epoch})"
    return f"broker {controller.get('nodeId')} (ZooKeeper mode)"


def _optional(value: object) -> str:
    return "-" if value is None else str(value)
