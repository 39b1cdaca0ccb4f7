"""``kts acls`` as a process against a real ``kts serve``: KIP-373 grants that take effect, listing with
patterns and MATCH, removal, and exit codes 0, 1 (one line) and 2."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ADMIN, ALICE
from tests.e2e.cli_helpers import client_env, jaas_config, one_error_line, password_config, plain_service, run_kts
from tests.e2e.conftest import KTS, ROOT

NIMBUS = ("nimbus", "nimbus-pw")


@pytest.fixture
def url(zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path) -> str:
    return plain_service(processes, tmp_path, zk_connect, raw_zk, ADMIN, ALICE, NIMBUS)


@pytest.fixture
def admin(tmp_path: Path) -> Path:
    return jaas_config(tmp_path, *ADMIN)


def acls(url: str, config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_kts("acls", "--server", url, "--command-config", str(config), *argv)


def listed(url: str, config: Path, *argv: str) -> list[dict[str, str]]:
    result = acls(url, config, "--list", "--output", "json", *argv)
    assert result.returncode == 0, result.stderr
    found: list[dict[str, str]] = json.loads(result.stdout)["acls"]
    return found


def test_a_create_tokens_grant_takes_effect_and_its_removal_too(url: str, admin: Path, tmp_path: Path) -> None:
    nimbus = password_config(tmp_path, NIMBUS)
    create_for_joe = [
        "tokens",
        "--server",
        url,
        "--command-config",
        str(nimbus),
        "--create",
        "--owner-principal",
        "User:joe",
    ]
    assert run_kts(*create_for_joe).returncode == 1

    added = acls(
        url,
        admin,
        "--add",
        "--allow-principal",
        "User:nimbus",
        "--operation",
        "CreateTokens",
        "--user-principal",
        "User:joe",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout == (
        "Adding ACLs for resource `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`: \n"
        " \t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) \n"
        "\n"
        "Current ACLs for resource `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`: \n"
        " \t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) \n"
        "\n"
    )

    created = run_kts(*create_for_joe, "--output", "json")
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)
    assert (token["owner"], token["tokenRequester"]) == ("User:joe", "User:nimbus")

    assert listed(url, admin, "--user-principal", "User:joe") == [
        {
            "resourceType": "User",
            "resourceName": "User:joe",
            "patternType": "LITERAL",
            "principal": "User:nimbus",
            "host": "*",
            "operation": "CreateTokens",
            "permissionType": "Allow",
        }
    ]
    removed = acls(url, admin, "--remove", "--user-principal", "User:joe", "--force")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == ""  # as kafka-acls.sh: no ACLs left on the resource, nothing to list
    assert listed(url, admin) == []
    refused = run_kts(*create_for_joe)
    assert refused.returncode == 1
    assert "may not create tokens for User:joe" in one_error_line(refused)


def test_list_filters_and_match(url: str, admin: Path) -> None:
    for argv in (
        ["--allow-principal", "User:nimbus", "--operation", "CreateTokens", "--user-principal", "User:team-a"],
        ["--allow-principal", "User:spark", "--operation", "CreateTokens", "--operation", "DescribeTokens",
         "--user-principal", "User:team-", "--resource-pattern-type", "prefixed"],
        ["--deny-principal", "User:mallory", "--deny-host", "192.0.2.66", "--user-principal", "*"],
        ["--allow-principal", "User:ops", "--operation", "Alter", "--cluster"],
        ["--allow-principal", "User:auditor", "--operation", "Describe",
         "--delegation-token", "E8gTWaIxRUOaSRH7wY3N1w"],
    ):  # fmt: skip
        result = acls(url, admin, "--add", *argv)
        assert result.returncode == 0, result.stderr

    assert len(listed(url, admin)) == 6
    assert [a["principal"] for a in listed(url, admin, "--user-principal", "User:team-a")] == ["User:nimbus"]
    prefixed = listed(url, admin, "--user-principal", "User:team-", "--resource-pattern-type", "prefixed")
    assert sorted(a["operation"] for a in prefixed) == ["CreateTokens", "DescribeTokens"]
    assert len(listed(url, admin, "--user-principal", "User:team-", "--resource-pattern-type", "any")) == 2
    matching = listed(url, admin, "--user-principal", "User:team-a", "--resource-pattern-type", "match")
    assert sorted(a["principal"] for a in matching) == ["User:mallory", "User:nimbus", "User:spark", "User:spark"]
    assert [a["resourceType"] for a in listed(url, admin, "--principal", "User:ops")] == ["Cluster"]
    assert [a["resourceName"] for a in listed(url, admin, "--cluster")] == ["kafka-cluster"]
    assert listed(url, admin, "--delegation-token", "E8gTWaIxRUOaSRH7wY3N1w")[0]["operation"] == "Describe"
    table = acls(url, admin, "--list")
    assert table.stdout.count("Current ACLs for resource `") == 5  # one block per resource pattern
    assert table.stdout.startswith(
        "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"
        " \t(principal=User:ops, host=*, operation=ALTER, permissionType=ALLOW) \n\n"
    )
    assert (
        "Current ACLs for resource `ResourcePattern(resourceType=USER, name=User:team-, patternType=PREFIXED)`: \n"
        " \t(principal=User:spark, host=*, operation=CREATE_TOKENS, permissionType=ALLOW)\n"
        "\t(principal=User:spark, host=*, operation=DESCRIBE_TOKENS, permissionType=ALLOW) \n\n"
    ) in table.stdout
    by_principal = acls(url, admin, "--list", "--principal", "User:ops")
    assert by_principal.stdout == (
        "ACLs for principal `User:ops`\n"
        "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"
        " \t(principal=User:ops, host=*, operation=ALTER, permissionType=ALLOW) \n\n"
    )

    # remove one entry precisely: the other operation on the same resource stays
    precise = acls(
        url, admin, "--remove", "--allow-principal", "User:spark", "--operation", "DescribeTokens",
        "--user-principal", "User:team-", "--resource-pattern-type", "prefixed", "--output", "json", "--force",
    )  # fmt: skip
    assert precise.returncode == 0, precise.stderr
    assert [a["operation"] for a in json.loads(precise.stdout)["deleted"]] == ["DescribeTokens"]
    # MATCH removes everything that applies to the name: the literal, the prefix, the wildcard
    match_all = ["--remove", "--user-principal", "User:team-a", "--resource-pattern-type", "match"]
    unasked = acls(url, admin, *match_all)  # standard input is a pipe: nobody can answer the question
    assert unasked.returncode == 1
    assert "add --force" in one_error_line(unasked)
    assert len(listed(url, admin)) == 5
    matched = acls(url, admin, *match_all, "--force", "--output", "json")
    assert matched.returncode == 0, matched.stderr
    assert len(json.loads(matched.stdout)["deleted"]) == 3
    assert sorted(a["resourceType"] for a in listed(url, admin)) == ["Cluster", "DelegationToken"]


def test_managing_acls_needs_alter_on_the_cluster(url: str, tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    result = acls(
        url,
        alice,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "CreateTokens",
        "--user-principal",
        "User:joe",
    )
    assert result.returncode == 1
    one_error_line(result)
    assert acls(url, alice, "--list").returncode == 1


def test_the_service_refuses_acls_it_would_not_grant(url: str, admin: Path) -> None:
    result = acls(
        url, admin, "--add", "--allow-principal", "User:a", "--operation", "Read", "--user-principal", "User:joe"
    )
    assert result.returncode == 1
    assert "Read" in one_error_line(result)
    bad_host = acls(url, admin, "--add", "--allow-principal", "User:a", "--allow-host", "somewhere", "--cluster")
    assert bad_host.returncode == 1
    assert "host" in one_error_line(bad_host)


def test_bad_usage_exits_2(url: str, admin: Path) -> None:
    for argv in (
        ["--add", "--cluster"],
        ["--remove"],
        ["--list", "--operation", "All"],
        ["--add", "--allow-principal", "User:a", "--topic", "orders"],
        ["--add", "--allow-principal", "User:a", "--cluster", "--operation", "Fly"],
    ):
        result = acls(url, admin, *argv)
        assert result.returncode == 2, argv
        assert "usage: kts" in result.stderr


def test_service_down_exits_1(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    result = run_kts("acls", "--server", down, "--command-config", str(password_config(tmp_path, ADMIN)), "--list")
    assert result.returncode == 1
    assert f"cannot reach {down}" in one_error_line(result)


def _on_a_terminal(url: str, config: Path, answer: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``kts acls`` with a terminal as standard input, on which ``answer`` has been typed."""
    leader, follower = pty.openpty()
    try:
        os.write(leader, answer.encode())
        return subprocess.run(
            [*KTS, "acls", "--server", url, "--command-config", str(config), *argv],
            cwd=ROOT, env=client_env(), stdin=follower, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(follower)
        os.close(leader)


def test_remove_asks_as_kafka_acls_does_and_only_y_removes(url: str, admin: Path) -> None:
    grant = ["--allow-principal", "User:nimbus", "--operation", "CreateTokens", "--user-principal", "User:joe"]
    assert acls(url, admin, "--add", *grant).returncode == 0
    question = (
        "Are you sure you want to remove ACLs: \n"
        " \t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) \n"
        " from resource filter `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`? (y/n)\n"
    )
    current = (
        "Current ACLs for resource `ResourcePattern(resourceType=USER, name=User:joe, patternType=LITERAL)`: \n"
        " \t(principal=User:nimbus, host=*, operation=CREATE_TOKENS, permissionType=ALLOW) \n\n"
    )
    declined = _on_a_terminal(url, admin, "n\n", "--remove", *grant)
    assert declined.returncode == 0, declined.stderr
    assert declined.stdout == question + current
    assert len(listed(url, admin)) == 1
    confirmed = _on_a_terminal(url, admin, "y\n", "--remove", *grant)
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout == question
    assert listed(url, admin) == []
