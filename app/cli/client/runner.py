"""How a client command runs: check its options, call the service, print what it answered.

Cheap to import, like the options: the HTTP client is imported when a command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.cli.client.http_client import KtsClient


def run_client_command(
    args: argparse.Namespace,
    validate: Callable[[argparse.Namespace], str | None],
    act: Callable[[KtsClient, argparse.Namespace], str],
) -> int:
    """A usage error (exit 2) from ``validate``, else ``act`` with a client for ``--server`` and
    ``--command-config``, its text printed. Failures propagate for ``kts`` to print as one line."""
    problem = validate(args)
    if problem is not None:
        args.usage.error(problem)
    from app.cli.client.connection import open_client

    with open_client(args) as client:
        text = act(client, args)
    if text:  # Kafka's tools print nothing at all when there is nothing (an empty --list)
        print(text)
    return 0
