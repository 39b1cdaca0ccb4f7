"""``kts kafka TOOL ARGS...``: one of Kafka's own tools (``kafka-acls.sh`` and the others of
``kafka_broker/tools.py``) run from the cached release's jars, which have no ``bin/`` scripts.

The release is the one of the ``kts dev`` stack in ``--data-dir`` (``--kraft``: 4.x, ``--kafka``: 3.9; the stack
started last when the directory holds both), else the KRaft release. ``--admin`` logs the tool in to that
stack's broker as its ``admin``: it adds ``--bootstrap-server`` and the tool's client properties option
(``--command-config``, ``--producer.config`` or ``--consumer.config``) naming the stack's ``admin.properties``.
Without it the arguments go to the tool as they are, so the same command works against any cluster with a
``--command-config`` of one's own.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from app.cli.server.kafka_broker.dev_layout import ADMIN_CONFIG, DEFAULT_DATA_DIR, KRAFT_STACK, ZOOKEEPER_MODE_STACK
from app.cli.server.kafka_broker.tools import TOOLS

_STACKS = (KRAFT_STACK, ZOOKEEPER_MODE_STACK)


class DevStackMissing(RuntimeError):
    """``--admin`` without a kts dev stack (or its admin's client properties) in the data dir."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    kafka = commands.add_parser(
        "kafka",
        help="run one of Kafka's tools (acls, configs, console-producer, ...) from kts dev's Kafka release",
        description="Run Kafka's own tool kafka-TOOL.sh from the jars kts dev fetched, e.g. "
        "kts kafka --admin acls --list, or kts kafka configs --bootstrap-server HOST:PORT --command-config FILE "
        f"--describe --entity-type users. Tools: {', '.join(tool.name for tool in TOOLS)}.",
    )
    kafka.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the kts dev stack's data dir")
    kafka.add_argument(
        "--admin",
        action="store_true",
        help="log in to the kts dev stack's broker as its admin (adds --bootstrap-server and --command-config)",
    )
    kafka.add_argument("tool", help="the script's name without kafka- and .sh: acls, configs, topics, ...")
    kafka.add_argument("arguments", nargs=argparse.REMAINDER, help="the tool's own arguments")
    kafka.set_defaults(handler=run_kafka_tool)


def run_kafka_tool(args: argparse.Namespace) -> int:
    from app.cli.server.kafka_broker.broker import write_tools_logging
    from app.cli.server.kafka_broker.release import (
        KRAFT_RELEASE,
        ZOOKEEPER_MODE_RELEASE,
        cache_root,
        fetch,
        is_cached,
    )
    from app.cli.server.kafka_broker.tools import tool_named

    tool = tool_named(args.tool)
    stack = dev_stack(args.data_dir)
    version = KRAFT_RELEASE if stack is None or stack.name == KRAFT_STACK else ZOOKEEPER_MODE_RELEASE
    if not is_cached(version):
        print(f"fetching Kafka {version} with Maven into {cache_root()} (once) ...", file=sys.stderr)
    release = fetch(version)
    arguments = list(args.arguments)
    if args.admin:
        arguments = admin_arguments(stack, args.data_dir, tool.config_option, tool.script) + arguments
    command = [
        "java",
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1",  # a tool is short-lived: only the quick compiler (it starts faster)
        "-XX:+UseSerialGC",
        "-Duser.timezone=UTC",
        *write_tools_logging(cache_root() / version),
        "-cp",
        release.classpath,
        release.main_class(tool.name),
        *arguments,
    ]
    return subprocess.call(command)  # noqa: S603 - the user's own arguments to the tool, no shell


def dev_stack(data_dir: Path) -> Path | None:
    """The kts dev stack's broker directory in ``data_dir``: the one started last, or None."""
    started = [data_dir / name for name in _STACKS if (data_dir / name / "server.properties").is_file()]
    return max(started, key=lambda path: (path / "server.properties").stat().st_mtime, default=None)


def admin_arguments(stack: Path | None, data_dir: Path, config_option: str | None, script: str) -> list[str]:
    from app.settings import read_properties

    if config_option is None:
        raise DevStackMissing(f"{script} logs in to no broker: run it without --admin")
    if stack is None:
        raise DevStackMissing(f"no kts dev Kafka broker in {data_dir}: start one with kts dev --kraft (or --kafka)")
    config = stack / ADMIN_CONFIG
    if not config.is_file():
        raise DevStackMissing(
            f"no {config}: the admin's password was not known when the stack last started "
            "(start kts dev again with KTS_ADMIN_PASSWORD set)"
        )
    listener = read_properties(stack / "server.properties")["advertised.listeners"]
    bootstrap = listener.split("://", 1)[1].split(",", 1)[0]
    return ["--bootstrap-server", bootstrap, config_option, str(config)]
