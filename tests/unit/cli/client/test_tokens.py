"""``kts tokens``: kafka-delegation-tokens.sh's option rules, Kafka's table, JSON output."""

from __future__ import annotations

import argparse
import base64
from datetime import UTC

import pytest

from app.cli.client import tokens
from app.cli.client.http_client import TokenJson
from app.cli.main import _parser

HMAC = base64.b64encode(bytes(range(64))).decode()
TOKEN: TokenJson = {
    "tokenId": "E8gTWaIxRUOaSRH7wY3N1w",
    "owner": "User:joe",
    "tokenRequester": "User:nimbus",
    "renewers": ["User:nimbus", "User:ops"],
    "issueTimestamp": 1_700_000_000_000,
    "expiryTimestamp": 1_700_086_400_000,
    "maxTimestamp": 1_700_604_800_000,
}


def parse(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["tokens", *argv])


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as excinfo:
        args = parse(*argv)
        problem = tokens.validate(args)
        if problem is not None:
            args.usage.error(problem)
    assert excinfo.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--create"],
        ["--create", "--owner-principal", "User:joe", "--renewer-principal", "User:a", "--renewer-principal", "User:b"],
        ["--create", "--max-life-time-period", "-1"],
        ["--renew", "--hmac", HMAC, "--renew-time-period", "3600000"],
        ["--renew", "--hmac", HMAC],
        ["--expire", "--hmac", HMAC, "--expiry-time-period", "-1"],
        ["--describe"],
        ["--describe", "--owner-principal", "User:a", "--owner-principal", "User:b", "--output", "json"],
        ["--revoke", "--owner-principal", "User:a"],
        ["--revoke", "--requester-principal", "User:nimbus"],
        ["--revoke", "--owner-principal", "User:a", "--requester-principal", "User:nimbus", "--output", "json"],
    ],
)
def test_valid_invocations(argv: list[str]) -> None:
    assert tokens.validate(parse(*argv)) is None


def test_options_are_parsed_as_kafka_names_them() -> None:
    args = parse(
        "--create", "--owner-principal", "User:joe", "--renewer-principal", "User:a", "--max-life-time-period", "5"
    )
    assert (args.action, args.owner_principal, args.renewer_principal, args.max_life_time_period) == (
        "create",
        ["User:joe"],
        ["User:a"],
        5,
    )
    assert args.output == "table"


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        ([], "one of the arguments --create --renew --expire --describe --revoke is required"),
        (["--revoke"], "--revoke needs --owner-principal, --requester-principal or both"),
        (["--revoke", "--owner-principal", "User:a", "--owner-principal", "User:b"], "--revoke takes at most one"),
        (["--revoke", "--owner-principal", "User:a", "--hmac", HMAC], "--hmac cannot be used with --revoke"),
        (["--describe", "--requester-principal", "User:a"], "--requester-principal cannot be used with --describe"),
        (["--revoke", "--requester-principal", "nimbus"], "must have a type"),
        (["--create", "--describe"], "not allowed with argument"),
        (["--create", "--hmac", HMAC], "--hmac cannot be used with --create"),
        (["--create", "--renew-time-period", "1"], "--renew-time-period cannot be used with --create"),
        (["--create", "--owner-principal", "User:a", "--owner-principal", "User:b"], "at most one --owner-principal"),
        (["--renew"], "--renew needs --hmac"),
        (["--expire"], "--expire needs --hmac"),
        (["--renew", "--hmac", HMAC, "--owner-principal", "User:a"], "--owner-principal cannot be used with --renew"),
        (["--expire", "--hmac", HMAC, "--renew-time-period", "1"], "--renew-time-period cannot be used with --expire"),
        (["--describe", "--hmac", HMAC], "--hmac cannot be used with --describe"),
        (["--describe", "--renewer-principal", "User:a"], "--renewer-principal cannot be used with --describe"),
        (["--create", "--owner-principal", "joe"], "must have a type"),
        (["--create", "--max-life-time-period", "soon"], "not a whole number"),
        (["--describe", "--output", "yaml"], "invalid choice"),
    ],
)
def test_bad_usage_exits_2_with_a_reason(capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str) -> None:
    assert complaint in usage_error(capsys, *argv)


def test_revoked_ids_are_printed_one_per_line() -> None:
    assert tokens.revoked_text(["a", "b"]) == "Revoked 2 delegation tokens.\na\nb"
    assert tokens.revoked_text([]) == "Revoked 0 delegation tokens."


def test_a_malformed_hmac_is_refused_without_echoing_it(capsys: pytest.CaptureFixture[str]) -> None:
    secretish = "c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1ub3QtYmUtZWNob2Vk"
    err = usage_error(capsys, "--renew", "--hmac", secretish)
    assert "88-character" in err
    assert secretish not in err


HEADER = (
    "TOKENID         HMAC                           OWNER           REQUESTER       RENEWERS                  "
    "ISSUEDATE       EXPIRYDATE      MAXDATE        "
)


def test_describe_prints_kafkas_lines_and_table_and_hides_hmacs() -> None:
    text = tokens.described_text([TOKEN, {**TOKEN, "tokenId": "other", "renewers": []}], ["User:joe"], UTC)
    assert text == (
        "Calling describe token operation for owners :[User:joe]\n"
        "Total number of tokens : 2\n"
        "\n"
        f"{HEADER}\n"
        "E8gTWaIxRUOaSRH7wY3N1w <hidden>                       User:joe        User:nimbus     "
        "[User:nimbus, User:ops]   2023-11-14T22:13 2023-11-15T22:13 2023-11-21T22:13\n"
        "\n"
        "other           <hidden>                       User:joe        User:nimbus     "
        "[]                        2023-11-14T22:13 2023-11-15T22:13 2023-11-21T22:13"
    )


def test_create_prints_kafkas_calling_line_and_the_hmac() -> None:
    text = tokens.created_text({**TOKEN, "hmac": HMAC}, ["User:nimbus", "User:ops"], -1, UTC)
    assert text == (
        "Calling create token operation with renewers :[User:nimbus, User:ops] , max-life-time-period :-1\n"
        "Created delegation token with tokenId : E8gTWaIxRUOaSRH7wY3N1w\n"
        "\n"
        f"{HEADER}\n"
        f"E8gTWaIxRUOaSRH7wY3N1w {HMAC} User:joe        User:nimbus     "
        "[User:nimbus, User:ops]   2023-11-14T22:13 2023-11-15T22:13 2023-11-21T22:13"
    )


def test_renew_and_expire_print_kafkas_lines_without_the_hmac() -> None:
    result = {"tokenId": "E8gTWaIxRUOaSRH7wY3N1w", "expiryTimestamp": 1_700_086_400_000}
    assert tokens.expiry_text("renew", 3600000, result, UTC) == (
        "Calling renew token operation with hmac :<hidden> , renew-time-period :3600000\n"
        "Completed renew operation. New expiry date : 2023-11-15T22:13"
    )
    assert tokens.expiry_text("expire", -1, result, UTC) == (
        "Calling expire token operation with hmac :<hidden> , expire-time-period : -1\n"
        "Completed expire operation. New expiry date : 2023-11-15T22:13"
    )


def test_an_empty_describe_for_the_current_user_still_prints_the_header() -> None:
    assert tokens.described_text([], None, UTC) == (
        f"Calling describe token operation for current user.\nTotal number of tokens : 0\n\n{HEADER}"
    )
