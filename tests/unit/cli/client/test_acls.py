"""``kts acls``: kafka-acls.sh's option rules, the ACLs an invocation means, MATCH, the table."""

from __future__ import annotations

import argparse
import io

import pytest

from app.cli.client import acls, kafka_text
from app.cli.client.http_client import AclJson
from app.cli.main import _parser


def parse(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["acls", *argv])


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as excinfo:
        args = parse(*argv)
        problem = acls.validate(args)
        if problem is not None:
            args.usage.error(problem)
    assert excinfo.value.code == 2
    return capsys.readouterr().err


def acl(name: str, pattern: str = "LITERAL", **changes: str) -> AclJson:
    base = AclJson(
        resourceType="User",
        resourceName=name,
        patternType=pattern,
        principal="User:nimbus",
        host="*",
        operation="CreateTokens",
        permissionType="Allow",
    )
    return AclJson(**{**base, **changes})  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CreateTokens", "CreateTokens"),
        ("createtokens", "CreateTokens"),
        ("CREATE_TOKENS", "CreateTokens"),
        ("describe-tokens", "DescribeTokens"),
        ("all", "All"),
        ("Alter", "Alter"),
    ],
)
def test_operations_in_any_spelling_kafka_accepts(text: str, expected: str) -> None:
    assert acls.operation(text) == expected


def test_add_means_every_principal_host_and_operation_on_every_resource() -> None:
    args = parse(
        "--add",
        "--allow-principal",
        "User:nimbus",
        "--allow-principal",
        "User:spark",
        "--allow-host",
        "192.0.2.7",
        "--deny-principal",
        "User:mallory",
        "--operation",
        "CreateTokens",
        "--operation",
        "DescribeTokens",
        "--user-principal",
        "User:joe",
        "--cluster",
    )
    assert acls.validate(args) is None
    bindings = acls.bindings_to_add(args)
    assert len(bindings) == 2 * (2 * 1 * 2 + 1 * 1 * 2)
    assert bindings[0] == AclJson(
        resourceType="User",
        resourceName="User:joe",
        patternType="LITERAL",
        principal="User:nimbus",
        host="192.0.2.7",
        operation="CreateTokens",
        permissionType="Allow",
    )
    denied = [b for b in bindings if b["permissionType"] == "Deny"]
    assert {b["host"] for b in denied} == {"*"}
    assert {(b["resourceType"], b["resourceName"]) for b in bindings} == {
        ("User", "User:joe"),
        ("Cluster", "kafka-cluster"),
    }


def test_operation_defaults_to_all_and_pattern_type_to_literal() -> None:
    args = parse("--add", "--allow-principal", "User:nimbus", "--delegation-token", "E8gTWaIxRUOaSRH7wY3N1w")
    [binding] = acls.bindings_to_add(args)
    assert (binding["operation"], binding["patternType"], binding["resourceType"]) == (
        "All",
        "LITERAL",
        "DelegationToken",
    )


def test_prefixed_is_accepted_in_any_case() -> None:
    args = parse(
        "--add",
        "--allow-principal",
        "User:nimbus",
        "--user-principal",
        "User:team-",
        "--resource-pattern-type",
        "PREFIXED",
    )
    assert acls.bindings_to_add(args)[0]["patternType"] == "PREFIXED"


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        ([], "one of the arguments --add --remove --list is required"),
        (["--add", "--list"], "not allowed with argument"),
        (["--add", "--allow-principal", "User:a"], "--add needs a resource"),
        (["--add", "--cluster"], "--add needs --allow-principal or --deny-principal"),
        (
            ["--add", "--cluster", "--allow-principal", "User:a", "--resource-pattern-type", "match"],
            "literal or prefixed",
        ),
        (["--add", "--cluster", "--allow-principal", "User:a", "--deny-host", "192.0.2.1"], "--deny-host needs"),
        (["--add", "--cluster", "--deny-principal", "User:a", "--allow-host", "192.0.2.1"], "--allow-host needs"),
        (["--remove"], "--remove needs a resource"),
        (["--list", "--allow-principal", "User:a"], "--list filters with --principal"),
        (["--list", "--operation", "All"], "--list filters with --principal"),
        (["--add", "--cluster", "--allow-principal", "User:a", "--principal", "User:b"], "--principal filters --list"),
        (["--add", "--cluster", "--allow-principal", "nobody"], "must have a type"),
        (["--add", "--cluster", "--allow-principal", "User:a", "--operation", "Fly"], "not a Kafka ACL operation"),
        (["--list", "--resource-pattern-type", "regex"], "invalid choice"),
        (["--list", "--topic", "t"], "unrecognized arguments"),
    ],
)
def test_bad_usage_exits_2_with_a_reason(capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str) -> None:
    assert complaint in usage_error(capsys, *argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["--list"],
        ["--list", "--principal", "User:nimbus", "--resource-pattern-type", "any"],
        ["--list", "--user-principal", "User:joe", "--resource-pattern-type", "match"],
        ["--remove", "--user-principal", "User:joe"],
        ["--remove", "--user-principal", "User:joe", "--allow-principal", "User:nimbus", "--operation", "CreateTokens"],
        ["--remove", "--cluster", "--resource-pattern-type", "any", "--force"],
    ],
)
def test_valid_list_and_remove_invocations(argv: list[str]) -> None:
    assert acls.validate(parse(*argv)) is None


@pytest.mark.parametrize(
    ("binding", "applies"),
    [
        (acl("User:joe"), True),
        (acl("*"), True),
        (acl("User:jo", "PREFIXED"), True),
        (acl("User:", "PREFIXED"), True),
        (acl("User:joey"), False),
        (acl("User:jo"), False),
        (acl("User:joey", "PREFIXED"), False),
    ],
)
def test_match_is_kafkas_match_filter(binding: AclJson, applies: bool) -> None:
    assert acls.applies_to(binding, "User:joe") is applies


def test_current_acls_are_kafkas_blocks_one_per_resource_pattern() -> None:
    text = kafka_text.current_acls(
        [
            acl("User:team-", "PREFIXED", permissionType="Deny"),
            acl("User:joe", principal="User:alice"),
            acl("User:joe"),
        ]
    )
    assert text == (
        "Current ACLs for resource `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=CREATE_TOKENS, permissionType=ALLOW)\n"
        "\t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) \n"
        "\n"
        "Current ACLs for resource `ResourcePattern(resourceType=USER, name=User:team-, patternType=PREFIXED)`: \n"
        " \t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=DENY) \n"
    )
    assert kafka_text.current_acls([]) == ""


def test_adding_block_and_enum_names() -> None:
    pattern = ("DelegationToken", "abc", "LITERAL")
    assert kafka_text.adding_block(pattern, [("User:ops", "198.51.100.1", "DescribeTokens", "Allow")]) == (
        "Adding ACLs for resource `ResourcePattern(resourceType=DELEGATION_TOKEN, name=abc, patternType=LITERAL)`: \n"
        " \t(principal=User:ops, host=198.51.100.1, operation=DESCRIBE_TOKENS, permissionType=ALLOW) \n"
    )


def test_removal_questions_are_kafkas() -> None:
    args = parse(
        "--remove", "--allow-principal", "User:nimbus", "--operation", "CreateTokens", "--user-principal", "User:joe"
    )
    assert acls.removal_questions(args)[0][1] == (
        "Are you sure you want to remove ACLs: \n"
        " \t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) \n"
        " from resource filter `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`? (y/n)"
    )
    everything = parse("--remove", "--cluster", "--resource-pattern-type", "any")
    assert acls.removal_questions(everything)[0][1] == (
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=ANY)`? (y/n)"
    )


def test_a_removal_nobody_can_confirm_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # piped: not a terminal
    with pytest.raises(acls.RemovalNotConfirmed, match="add --force"):
        acls.confirm("Are you sure? (y/n)", json_output=False)
