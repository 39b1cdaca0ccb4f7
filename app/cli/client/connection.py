"""The service a client command talks to: ``--server`` and ``--command-config`` made into a ``KtsClient``."""

from __future__ import annotations

import argparse
import os

from app.cli.client.command_config import CommandConfig, load_command_config, server_url
from app.cli.client.http_client import KtsClient


def open_client(args: argparse.Namespace, config: CommandConfig | None = None) -> KtsClient:
    """A client for ``--server`` with the ``--command-config`` credentials (ConfigError if they are bad);
    ``config`` is that file when the caller has read it already."""
    server = server_url(args.server, os.environ)
    return KtsClient(server, load_command_config(args.command_config) if config is None else config)
