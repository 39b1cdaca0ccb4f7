"""The service a client command talks to: ``--server`` and ``--command-config`` (or ``$KTS_COMMAND_CONFIG``)
made into a ``KtsClient``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

import httpx

from app.cli.client.arguments import COMMAND_CONFIG_ENV
from app.cli.client.command_config import CommandConfig, load_command_config, server_url
from app.cli.client.http_client import KtsClient, MissingCredentials

MISSING_CREDENTIALS = (
    "no credentials: give a properties file with username= and password= (or token.id= and token.hmac=, "
    "a Kafka client's sasl.jaas.config, or ssl.certfile= and ssl.keyfile= or ssl.keystore.location= for a client "
    "certificate) "
    f"as --command-config FILE or in {COMMAND_CONFIG_ENV}=FILE"
)


def command_config_path(explicit: Path | None, environ: Mapping[str, str]) -> Path | None:
    """``--command-config``, else ``$KTS_COMMAND_CONFIG`` (unset or empty: none)."""
    if explicit is not None:
        return explicit
    from_env = environ.get(COMMAND_CONFIG_ENV, "").strip()
    return Path(from_env).expanduser() if from_env else None


def load_config(args: argparse.Namespace) -> CommandConfig:
    return load_command_config(command_config_path(args.command_config, os.environ))


def open_client(
    args: argparse.Namespace, config: CommandConfig | None = None, *, auth: httpx.Auth | None = None
) -> KtsClient:
    """A client for ``--server`` with the command config's credentials (ConfigError if they are bad,
    MissingCredentials if there are none); ``config`` is that file when the caller has read it already;
    ``auth`` logs in instead (a JWT file)."""
    server = server_url(args.server, os.environ)
    config = load_config(args) if config is None else config
    if auth is None and config.credential is None and config.certfile is None and config.identity is None:
        raise MissingCredentials(MISSING_CREDENTIALS)
    return KtsClient(server, config, auth=auth)
