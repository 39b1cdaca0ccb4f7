"""``kts users``: kafka-configs.sh's --add-config syntax, its checks, and its output lines."""

from __future__ import annotations

import argparse

import pytest

from app.cli.client import kafka_text, users
from app.cli.main import _parser


def parse(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["users", *argv])


def test_add_config_is_kafka_configs_syntax() -> None:
    assert users.parse_add_config("SCRAM-SHA-512=[iterations=8192,password=alice-secret]") == [
        ("SCRAM-SHA-512", "alice-secret", 8192)
    ]
    assert users.parse_add_config("SCRAM-SHA-256=[password=p=q],SCRAM-SHA-512=[iterations=4096,password=x]") == [
        ("SCRAM-SHA-256", "p=q", 4096),
        ("SCRAM-SHA-512", "x", 4096),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "SCRAM-SHA-1=[password=never-echo-me]",
        "SCRAM-SHA-512=[iterations=8192]",
        "SCRAM-SHA-512=[iterations=100,password=never-echo-me]",
        "SCRAM-SHA-512=[salt=x,password=never-echo-me]",
        "SCRAM-SHA-512=password=never-echo-me",
    ],
)
def test_bad_add_config_is_refused_without_echoing_it(text: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        users.parse_add_config(text)
    assert "never-echo-me" not in str(excinfo.value)


def test_option_rules() -> None:
    assert users.validate(parse("--describe")) == "--describe needs --entity-name USER (or --user USER)"
    assert users.validate(parse("--alter", "--user", "alice")) == "--alter needs --add-config or --delete-config"
    assert users.validate(parse("--describe", "--user", "alice")) is None
    both = parse(
        "--alter", "--user", "a", "--add-config", "SCRAM-SHA-512=[password=x]", "--delete-config", "SCRAM-SHA-512"
    )
    assert users.validate(both) == "a mechanism cannot be both added and deleted"
    assert users.validate(parse("--alter", "--entity-name", "a", "--delete-config", "MD5")) == (
        "--delete-config takes SCRAM-SHA-256 and/or SCRAM-SHA-512"
    )


def test_output_lines_are_kafka_configs() -> None:
    assert kafka_text.config_updated("alice") == "Completed updating config for user alice."
    assert kafka_text.scram_description("alice", [("SCRAM-SHA-512", 8192)]) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192"
    )
    assert kafka_text.scram_description("bob", [("SCRAM-SHA-256", 4096), ("SCRAM-SHA-512", 8192)]) == (
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=4096, "
        "SCRAM-SHA-512=iterations=8192"
    )
