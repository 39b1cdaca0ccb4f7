"""``kts tokens`` as a process against a real ``kts serve``: kafka-delegation-tokens.sh's options and table,
the credential forms of ``--command-config``, and exit codes 0, 1 (one line) and 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ADMIN, ALICE, BOB
from tests.conftest import SECRET, write_properties
from tests.e2e.cli_helpers import (
    client_env,
    jaas_config,
    one_error_line,
    password_config,
    plain_service,
    run_kts,
    serve_https,
)
from tests.tls_material import CertificateAuthority


@pytest.fixture
def url(zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]], tmp_path: Path) -> str:
    return plain_service(processes, tmp_path, zk_connect, raw_zk, ADMIN, ALICE, BOB)


def tokens(url: str, config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_kts("tokens", "--server", url, "--command-config", str(config), *argv)


def test_create_describe_renew_expire(url: str, tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    bob = jaas_config(tmp_path, *BOB)  # a Kafka client's file, SCRAM user login

    created = tokens(url, alice, "--create", "--renewer-principal", "User:bob", "--max-life-time-period", "-1")
    assert created.returncode == 0, created.stderr
    lines = created.stdout.splitlines()
    assert lines[0] == "Calling create token operation with renewers :[User:bob] , max-life-time-period :-1"
    token_id = lines[1].removeprefix("Created delegation token with tokenId : ")
    assert lines[2] == ""
    assert lines[3].split() == [
        "TOKENID",
        "HMAC",
        "OWNER",
        "REQUESTER",
        "RENEWERS",
        "ISSUEDATE",
        "EXPIRYDATE",
        "MAXDATE",
    ]
    row = lines[4].split()
    assert row[0] == token_id
    hmac = row[1]
    assert len(hmac) == 88  # create prints the HMAC, whole
    assert row[2:5] == ["User:alice", "User:alice", "[User:bob]"]
    verified = httpx.post(f"{url}/v1/tokens/verify", json={"tokenId": token_id, "hmac": hmac}, auth=ALICE)
    assert verified.json()["principal"] == "User:alice"

    described = tokens(url, bob, "--describe")
    assert described.returncode == 0, described.stderr
    assert described.stdout.splitlines()[:2] == [
        "Calling describe token operation for current user.",
        "Total number of tokens : 1",
    ]
    assert token_id in described.stdout
    assert hmac not in described.stdout
    assert "<hidden>" in described.stdout

    before = verified.json()["expiryTimestamp"]
    renewed = tokens(url, bob, "--renew", "--hmac", hmac, "--renew-time-period", "172800000")
    assert renewed.returncode == 0, renewed.stderr
    assert renewed.stdout.splitlines()[0] == (
        "Calling renew token operation with hmac :<hidden> , renew-time-period :172800000"
    )
    assert renewed.stdout.splitlines()[1].startswith("Completed renew operation. New expiry date : ")
    assert hmac not in renewed.stdout + renewed.stderr
    as_json = json.loads(tokens(url, alice, "--describe", "--owner-principal", "User:alice", "--output", "json").stdout)
    [token] = as_json["tokens"]
    assert token["tokenId"] == token_id
    assert token["expiryTimestamp"] > before
    assert "hmac" not in token

    expired = tokens(url, alice, "--expire", "--hmac", hmac, "--expiry-time-period", "-1", "--output", "json")
    assert expired.returncode == 0, expired.stderr
    assert json.loads(expired.stdout)["tokenId"] == token_id
    after = tokens(url, alice, "--describe", "--output", "json")
    assert json.loads(after.stdout) == {"tokens": []}


def test_json_create_and_an_expiry_period(url: str, tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    created = json.loads(tokens(url, alice, "--create", "--output", "json").stdout)
    assert len(created["hmac"]) == 88
    expired = tokens(
        url, alice, "--expire", "--hmac", created["hmac"], "--expiry-time-period", "60000", "--output", "json"
    )
    assert expired.returncode == 0
    new_expiry = json.loads(expired.stdout)["expiryTimestamp"]
    assert new_expiry < created["expiryTimestamp"]
    [still_there] = json.loads(tokens(url, alice, "--describe", "--output", "json").stdout)["tokens"]
    assert still_there["expiryTimestamp"] == new_expiry


def test_a_token_login_from_a_kafka_client_file_may_describe_but_not_create(url: str, tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    created = json.loads(tokens(url, alice, "--create", "--output", "json").stdout)
    token_login = jaas_config(tmp_path, created["tokenId"], created["hmac"], token=True, name="token")
    bearer = write_properties(
        tmp_path / "bearer.properties", {"token.id": created["tokenId"], "token.hmac": created["hmac"]}
    )
    for config in (token_login, bearer):
        described = tokens(url, config, "--describe", "--output", "json")
        assert described.returncode == 0, described.stderr
        assert [t["tokenId"] for t in json.loads(described.stdout)["tokens"]] == [created["tokenId"]]
        refused = tokens(url, config, "--create")
        assert refused.returncode == 1
        assert "delegation token" in one_error_line(refused)
        assert created["hmac"] not in refused.stderr


def test_server_from_the_environment(url: str, tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    result = run_kts("tokens", "--describe", "--command-config", str(alice), env=client_env(KTS_SERVER=url))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == "Total number of tokens : 0"


def test_wrong_password_exits_1_with_one_line(url: str, tmp_path: Path) -> None:
    wrong = password_config(tmp_path, ("alice", "never-echo-this-password"))
    result = tokens(url, wrong, "--create")
    assert result.returncode == 1
    one_error_line(result)
    assert "never-echo-this-password" not in result.stdout + result.stderr
    no_login = run_kts("tokens", "--server", url, "--describe")
    assert no_login.returncode == 1
    assert "--command-config" in one_error_line(no_login) and "KTS_COMMAND_CONFIG" in no_login.stderr


def test_refusals_exit_1_with_the_services_sentence(url: str, tmp_path: Path) -> None:
    bob = password_config(tmp_path, BOB)
    for_someone_else = tokens(url, bob, "--create", "--owner-principal", "User:alice")
    assert for_someone_else.returncode == 1
    assert "User:bob may not create tokens for User:alice" in one_error_line(for_someone_else)
    unknown = tokens(url, bob, "--renew", "--hmac", "A" * 86 + "==")
    assert unknown.returncode == 1
    one_error_line(unknown)
    bad_renewer = tokens(url, bob, "--create", "--renewer-principal", "Group:ops")
    assert bad_renewer.returncode == 1
    assert "User" in one_error_line(bad_renewer)


def test_bad_usage_exits_2(url: str, tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    for argv in (["--create", "--describe"], ["--renew"], ["--describe", "--output", "xml"], []):
        result = tokens(url, alice, *argv)
        assert result.returncode == 2, argv
        assert "usage: kts tokens" in result.stderr
    missing = run_kts("tokens", "--server", url, "--describe", "--command-config", str(tmp_path / "absent.properties"))
    assert missing.returncode == 2
    assert "absent.properties" in one_error_line(missing)
    ambiguous = write_properties(
        tmp_path / "both.properties", {"username": "a", "password": "p", "token.id": "t", "token.hmac": "h"}
    )
    assert tokens(url, ambiguous, "--describe").returncode == 2


def test_service_down_exits_1(tmp_path: Path) -> None:
    alice = password_config(tmp_path, ALICE)
    down = f"http://127.0.0.1:{free_port()}"
    result = run_kts("tokens", "--server", down, "--command-config", str(alice), "--describe")
    assert result.returncode == 1
    assert f"cannot reach {down}" in one_error_line(result)


def test_a_client_certificate_from_the_command_config(
    zk_connect: str, processes: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    ca = CertificateAuthority(tmp_path)
    alice = ca.issue("alice", CN="Alice", OU="eng", O="acme", C="US")
    url = serve_https(
        processes,
        tmp_path / "kts.log",
        zk_connect,
        SECRET,
        ca,
        client_auth="required",
        mapping_rules=r"RULE:^CN=([^,]+),OU=eng,O=acme,C=US$/$1/L,DEFAULT",
    )
    config = write_properties(
        tmp_path / "tls.properties",
        {"ssl.certfile": str(alice.cert), "ssl.keyfile": str(alice.key), "ssl.cafile": str(ca.path)},
    )
    trust_only = write_properties(tmp_path / "trust.properties", {"ssl.cafile": str(ca.path)})
    created = tokens(url, config, "--create", "--output", "json")
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["owner"] == "User:alice"
    without_certificate = tokens(url, trust_only, "--describe")
    assert without_certificate.returncode == 1
    assert "certificate" in one_error_line(without_certificate)
    untrusted = tokens(url, password_config(tmp_path, ALICE), "--describe")  # no ssl.cafile: the CA is unknown
    assert untrusted.returncode == 1
    assert f"cannot reach {url}" in one_error_line(untrusted)


def test_revoke_by_owner_and_by_requester_prints_the_revoked_ids(url: str, tmp_path: Path) -> None:
    admin = password_config(tmp_path, ADMIN)
    alice = password_config(tmp_path, ALICE)

    def create(config: Path, *argv: str) -> str:
        made = tokens(url, config, "--create", *argv, "--output", "json")
        assert made.returncode == 0, made.stderr
        token_id: str = json.loads(made.stdout)["tokenId"]
        return token_id

    alices = {create(alice), create(admin, "--owner-principal", "User:alice")}
    bobs_by_admin = create(admin, "--owner-principal", "User:bob")

    refused = tokens(url, alice, "--revoke", "--owner-principal", "User:bob")
    assert refused.returncode == 1
    assert "may not revoke tokens in bulk" in one_error_line(refused)

    by_owner = tokens(url, admin, "--revoke", "--owner-principal", "User:alice")
    assert by_owner.returncode == 0, by_owner.stderr
    lines = by_owner.stdout.splitlines()
    assert lines[0] == "Revoked 2 delegation tokens."
    assert set(lines[1:]) == alices

    both = ("--requester-principal", "User:admin", "--owner-principal", "User:bob")
    by_requester = tokens(url, admin, "--revoke", *both, "--output", "json")
    assert by_requester.returncode == 0, by_requester.stderr
    assert json.loads(by_requester.stdout) == {"revoked": [bobs_by_admin]}
    left = json.loads(tokens(url, admin, "--describe", "--output", "json").stdout)["tokens"]
    assert left == []

    for argv in (
        ["--revoke"],
        ["--revoke", "--owner-principal", "User:a", "--owner-principal", "User:b"],
        ["--revoke", "--owner-principal", "User:a", "--hmac", "A" * 86 + "=="],
        ["--describe", "--requester-principal", "User:a"],
    ):
        result = tokens(url, admin, *argv)
        assert result.returncode == 2, argv
        assert "usage: kts tokens" in result.stderr
