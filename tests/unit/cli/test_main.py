"""``kts`` itself: registering the commands stays cheap, and failures map to one line and an exit code."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from app.cli.main import FAILURES, _failure, main
from app.version import DISTRIBUTION

# What `kts --help` must not load: the server, the audit database, Spark and its Arrow and plotting stacks.
HEAVY = ("pyarrow", "pyspark", "fastapi", "uvicorn", "sqlalchemy", "matplotlib", "kafka")
MY_COMMANDS = """
import argparse, sys
from app.cli.client import acls, tokens
from app.cli.server import commands
from app.cli.sidecar import command
subcommands = argparse.ArgumentParser().add_subparsers()
commands.add_parsers(subcommands)
for module in (tokens, acls, command):
    module.add_parser(subcommands)
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def imported_by(*argv: str) -> set[str]:
    """The top-level packages a ``python -X importtime ...`` run imports (from its import-time report)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, timeout=60, check=True
    )
    lines = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in lines[1:]}


def test_registering_the_client_sidecar_and_server_commands_loads_nothing_heavy() -> None:
    result = subprocess.run([sys.executable, "-c", MY_COMMANDS], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    assert "app" in loaded  # the positive control: the report does list what was imported
    assert not loaded & {*HEAVY, "httpx", "kazoo", "pydantic", "rich"}


def test_kts_help_loads_nothing_heavy() -> None:
    loaded = imported_by("-m", "app.cli.main", "--help")
    assert {"app", "argparse"} <= loaded  # the positive control
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize(("module_name", "class_name"), [(entry[0], entry[1]) for entry in FAILURES])
def test_every_failure_names_an_exception_class(module_name: str, class_name: str) -> None:
    assert issubclass(getattr(importlib.import_module(module_name), class_name), Exception)


def test_failures_become_one_line_and_an_exit_code() -> None:
    from app.cli.client.http_client import ServiceUnreachable
    from app.domain.errors import StoreUnavailable
    from app.settings import ConfigError

    assert _failure(ServiceUnreachable("cannot reach http://127.0.0.1:9: refused")) == (
        1,
        "cannot reach http://127.0.0.1:9: refused",
    )
    assert _failure(ConfigError("zookeeper.connect: missing")) == (2, "configuration error: zookeeper.connect: missing")
    assert _failure(StoreUnavailable("ZooKeeper is unreachable")) == (1, "ZooKeeper is unreachable")
    assert _failure(ValueError("a bug")) is None


def test_a_bad_command_config_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokens", "--describe", "--server", "ftp://example.com"]) == 2
    assert (
        capsys.readouterr().err
        == "kts: configuration error: --server: 'ftp://example.com' is not a URL such as http://127.0.0.1:8080\n"
    )


@pytest.mark.parametrize("command", [[], ["tokens"], ["acls"], ["users"], ["audit"], ["sidecar"], ["serve"], ["dev"]])
def test_version_on_kts_and_every_command(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as excinfo:
        main([*command, "--version"])
    assert excinfo.value.code == 0
    assert capsys.readouterr().out == f"kts {version(DISTRIBUTION)}\n"


def test_bootstrap_server_is_the_server_option() -> None:
    from app.cli.main import _parser

    for command in ("tokens", "acls", "users", "audit", "sidecar"):
        args = _parser().parse_args([command, "--bootstrap-server", "http://kts:8080", *_REQUIRED[command]])
        assert args.server == "http://kts:8080"


_REQUIRED = {
    "tokens": ["--describe"],
    "acls": ["--list"],
    "users": ["--describe"],
    "audit": [],
    "sidecar": ["--output-file", "x"],
}


@pytest.mark.parametrize("option", ["--bootstrap-server", "--server"])
def test_a_broker_address_for_server_says_kts_wants_its_http_url(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kafka operators type a broker's host:port, as for Kafka's tools: one line says what kts wants."""
    assert main(["tokens", "--describe", option, "127.0.0.1:19092"]) == 2
    assert capsys.readouterr().err == (
        "kts: configuration error: --server: '127.0.0.1:19092' looks like a Kafka broker's address; kts's commands "
        "talk to kts over HTTP: give kts's URL (--server, alias --bootstrap-server), e.g. --server "
        "http://127.0.0.1:8080, or set KTS_SERVER\n"
    )
