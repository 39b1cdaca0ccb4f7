"""``kts sidecar`` as a process against a real ``kts serve`` with short token lifetimes: the file appears with
mode 0600 and verifies, the token is renewed, replaced before its maximum lifetime, survives a restart of the
service, and is expired on SIGTERM with ``--expire-on-exit``. Waits poll for a state, with generous limits."""

from __future__ import annotations

import json
import signal
import ssl
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import javaproperties
import pytest
from kazoo.client import KazooClient

from app.cli.client.command_config import TokenCredential, parse_sasl_jaas_config
from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ADMIN, ALICE, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET, write_properties
from tests.e2e.cli_helpers import client_env, jaas_config, password_config, run_kts, serve_https
from tests.e2e.conftest import KTS, ROOT, start_kts
from tests.jwt_material import AUDIENCE, ISSUER, SPARK, JwtKey, jwks, project_token
from tests.tls_material import CertificateAuthority

NIMBUS = ("nimbus", "nimbus-pw")
PATIENCE_S = 60.0
# Short lifetimes so that renewals and a replacement happen within seconds.
EXPIRY_MS, MAX_LIFETIME_MS = 2_000, 12_000


@pytest.fixture
def sidecars() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)


@pytest.fixture
def users(raw_zk: KazooClient) -> None:
    for user in (ADMIN, ALICE, NIMBUS):
        put_user(raw_zk, *user)


def serve(processes: list[subprocess.Popen[str]], tmp_path: Path, port: int, zk_connect: str, **settings: str) -> str:
    return start_kts(
        processes,
        tmp_path,
        "kts",
        port=port,
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SUPER_USERS="User:admin",
        **settings,
    )


def start_sidecar(
    sidecars: list[subprocess.Popen[str]], log: Path, url: str, config: Path, *argv: str
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*KTS, "sidecar", "--server", url, "--command-config", str(config), *argv],
        cwd=ROOT,
        env=client_env(),
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        text=True,
    )
    sidecars.append(process)
    return process


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return document


def verify(url: str, token_id: str, hmac: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/tokens/verify", json={"tokenId": token_id, "hmac": hmac}, auth=ADMIN, timeout=10)


def token_info(url: str, token_id: str) -> httpx.Response:
    return httpx.get(f"{url}/v1/tokens/{token_id}", auth=ADMIN, timeout=10)


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(30)


def test_keeps_a_fresh_token_and_expires_it_on_exit(
    users: None, zk_connect: str, processes: list, sidecars: list, tmp_path: Path
) -> None:
    url = serve(
        processes,
        tmp_path,
        free_port(),
        zk_connect,
        KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS=str(EXPIRY_MS),
        KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS=str(MAX_LIFETIME_MS),
    )
    out = tmp_path / "out" / "token.json"
    out.parent.mkdir()
    log = tmp_path / "sidecar.log"
    sidecar = start_sidecar(
        sidecars,
        log,
        url,
        password_config(tmp_path, ALICE),
        "--output-file", str(out),
        "--format", "json",
        "--expire-on-exit",
        "--replace-grace-period", "500",
    )  # fmt: skip

    eventually(lambda: read_json(out) is not None, PATIENCE_S)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    first = read_json(out)
    assert first is not None
    verified = verify(url, first["tokenId"], first["hmac"])
    assert verified.status_code == 200
    assert verified.json()["principal"] == "User:alice"

    def renewed() -> bool:
        now = read_json(out)
        return (
            now is not None and now["tokenId"] == first["tokenId"] and now["expiryTimestamp"] > first["expiryTimestamp"]
        )

    eventually(renewed, PATIENCE_S)

    def replaced() -> bool:
        now = read_json(out)
        return now is not None and now["tokenId"] != first["tokenId"]

    eventually(replaced, PATIENCE_S)
    second = read_json(out)
    assert second is not None
    assert verify(url, second["tokenId"], second["hmac"]).status_code == 200
    issued = token_info(url, second["tokenId"]).json()["issueTimestamp"]
    assert issued < first["maxTimestamp"]  # the replacement came before the first token's end
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [path.name for path in out.parent.iterdir()] == ["token.json"]  # no temporary files left over
    # the replaced token ends (after the grace period or at its own expiry)
    eventually(lambda: verify(url, first["tokenId"], first["hmac"]).status_code == 401, PATIENCE_S)

    current = read_json(out)
    assert current is not None
    assert stop(sidecar) == 0
    assert verify(url, current["tokenId"], current["hmac"]).status_code == 401
    assert token_info(url, current["tokenId"]).status_code == 404  # deleted, not just expired

    output = log.read_text()
    assert "renewed token" in output
    assert "replaced token" in output
    assert f"expired token {current['tokenId']}" in output
    for secret in (first["hmac"], second["hmac"], current["hmac"], ALICE[1]):
        assert secret not in output


def test_survives_a_restart_of_the_service(
    users: None, zk_connect: str, processes: list, sidecars: list, tmp_path: Path
) -> None:
    port = free_port()
    lifetimes = {"KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS": "4000", "KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS": "600000"}
    url = serve(processes, tmp_path, port, zk_connect, **lifetimes)
    out = tmp_path / "kafka-client.jaas"
    log = tmp_path / "sidecar.log"
    sidecar = start_sidecar(
        sidecars, log, url, jaas_config(tmp_path, *ALICE), "--output-file", str(out), "--format", "jaas"
    )

    def jaas_token() -> TokenCredential | None:
        try:
            body = " ".join(line for line in out.read_text().splitlines()[2:-1])
        except FileNotFoundError:
            return None
        credential = parse_sasl_jaas_config(body)
        assert isinstance(credential, TokenCredential)
        return credential

    eventually(lambda: jaas_token() is not None, PATIENCE_S)
    before = jaas_token()
    assert before is not None
    assert verify(url, before.token_id, before.hmac).status_code == 200
    expiry_before = token_info(url, before.token_id).json()["expiryTimestamp"]

    first_service = processes[-1]
    first_service.terminate()
    assert first_service.wait(30) == 0
    eventually(lambda: "retrying in" in log.read_text(), PATIENCE_S)  # the sidecar noticed and keeps trying
    assert sidecar.poll() is None

    serve(processes, tmp_path, port, zk_connect, **lifetimes)  # a new process on the same port

    def fresh_after_restart() -> bool:
        now = jaas_token()
        if now is None or verify(url, now.token_id, now.hmac).status_code != 200:
            return False
        return token_info(url, now.token_id).json()["expiryTimestamp"] > expiry_before

    eventually(fresh_after_restart, PATIENCE_S)
    assert sidecar.poll() is None
    last = jaas_token()
    assert last is not None
    assert stop(sidecar) == 0
    # without --expire-on-exit the token outlives the sidecar
    assert verify(url, last.token_id, last.hmac).status_code == 200
    assert before.hmac not in log.read_text()


def test_tokens_for_another_owner_are_renewed_by_the_sidecar(
    users: None, zk_connect: str, processes: list, sidecars: list, tmp_path: Path
) -> None:
    url = serve(
        processes,
        tmp_path,
        free_port(),
        zk_connect,
        KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS=str(EXPIRY_MS),
        KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS="600000",
    )
    granted = run_kts(
        "acls", "--server", url, "--command-config", str(password_config(tmp_path, ADMIN)),
        "--add", "--allow-principal", "User:nimbus", "--operation", "CreateTokens", "--user-principal", "User:joe",
    )  # fmt: skip
    assert granted.returncode == 0, granted.stderr
    out = tmp_path / "client.properties"
    sidecar = start_sidecar(
        sidecars,
        tmp_path / "sidecar.log",
        url,
        password_config(tmp_path, NIMBUS),
        "--output-file", str(out),
        "--owner-principal", "User:joe",
        "--security-protocol", "SASL_PLAINTEXT",
        "--expire-on-exit",
    )  # fmt: skip

    eventually(out.exists, PATIENCE_S)
    settings = javaproperties.loads(out.read_text())
    assert settings["security.protocol"] == "SASL_PLAINTEXT"
    assert settings["sasl.mechanism"] == "SCRAM-SHA-512"
    credential = parse_sasl_jaas_config(settings["sasl.jaas.config"])
    assert isinstance(credential, TokenCredential)
    verified = verify(url, credential.token_id, credential.hmac).json()
    assert (verified["principal"], verified["tokenRequester"]) == ("User:joe", "User:nimbus")
    info = token_info(url, credential.token_id).json()
    assert info["renewers"] == ["User:nimbus"]  # the sidecar named itself, so that it may renew
    eventually(
        lambda: token_info(url, credential.token_id).json()["expiryTimestamp"] > info["expiryTimestamp"], PATIENCE_S
    )
    assert stop(sidecar) == 0
    assert token_info(url, credential.token_id).status_code == 404


def test_a_certificate_login_learns_its_principal_and_then_renews(
    users: None, zk_connect: str, processes: list, sidecars: list, tmp_path: Path
) -> None:
    """With a client certificate the sidecar cannot know its principal before the service tells it (as
    ``tokenRequester``): the first token for another owner is replaced by one naming the sidecar a renewer."""
    ca = CertificateAuthority(tmp_path)
    spark = ca.issue("spark", CN="svc-spark", O="acme")
    url = serve_https(
        processes,
        tmp_path / "kts.log",
        zk_connect,
        SECRET,
        ca,
        client_auth="requested",
        mapping_rules=r"RULE:^CN=svc-(.*?),.*$/$1-service/,DEFAULT",
        KTS_SUPER_USERS="User:admin",
        KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS=str(EXPIRY_MS),
        KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS="600000",
    )
    admin = write_properties(
        tmp_path / "admin-tls.properties", {"username": ADMIN[0], "password": ADMIN[1], "ssl.cafile": str(ca.path)}
    )
    granted = run_kts(
        "acls", "--server", url, "--command-config", str(admin),
        "--add", "--allow-principal", "User:spark-service", "--operation", "CreateTokens",
        "--user-principal", "User:joe",
    )  # fmt: skip
    assert granted.returncode == 0, granted.stderr
    certificate_login = write_properties(
        tmp_path / "spark.properties",
        {"ssl.certfile": str(spark.cert), "ssl.keyfile": str(spark.key), "ssl.cafile": str(ca.path)},
    )
    out = tmp_path / "token.json"
    log = tmp_path / "sidecar.log"
    sidecar = start_sidecar(
        sidecars, log, url, certificate_login,
        "--output-file", str(out), "--format", "json", "--owner-principal", "User:joe", "--expire-on-exit",
    )  # fmt: skip
    context = ssl.create_default_context(cafile=str(ca.path))

    def info(token_id: str) -> httpx.Response:
        return httpx.get(f"{url}/v1/tokens/{token_id}", auth=ADMIN, verify=context, timeout=10)

    eventually(lambda: read_json(out) is not None, PATIENCE_S)
    first = read_json(out)
    assert first is not None
    assert info(first["tokenId"]).json()["renewers"] == []
    eventually(lambda: (read_json(out) or first)["tokenId"] != first["tokenId"], PATIENCE_S)
    second = read_json(out)
    assert second is not None
    second_info = info(second["tokenId"]).json()
    assert (second_info["owner"], second_info["renewers"]) == ("User:joe", ["User:spark-service"])
    eventually(lambda: info(second["tokenId"]).json()["expiryTimestamp"] > second_info["expiryTimestamp"], PATIENCE_S)
    assert stop(sidecar) == 0
    assert info(second["tokenId"]).status_code == 404
    assert "neither owner nor renewer" in log.read_text()


def test_a_refused_start_exits_1_and_writes_nothing(
    users: None, zk_connect: str, processes: list, tmp_path: Path
) -> None:
    url = serve(processes, tmp_path, free_port(), zk_connect)
    out = tmp_path / "token.json"
    wrong = password_config(tmp_path, ("alice", "never-echo-this-password"))
    result = run_kts("sidecar", "--server", url, "--command-config", str(wrong), "--output-file", str(out))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("kts: ")
    assert "never-echo-this-password" not in result.stderr
    assert not out.exists()
    not_allowed = run_kts(
        "sidecar", "--server", url, "--command-config", str(password_config(tmp_path, ALICE)),
        "--output-file", str(out), "--owner-principal", "User:joe",
    )  # fmt: skip
    assert not_allowed.returncode == 1
    assert "may not create tokens for User:joe" in not_allowed.stderr.strip().splitlines()[-1]


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    assert run_kts("sidecar", "--server", "http://127.0.0.1:9").returncode == 2  # no --output-file
    missing_dir = run_kts("sidecar", "--output-file", str(tmp_path / "absent" / "token.json"))
    assert missing_dir.returncode == 2
    assert "does not exist" in missing_dir.stderr
    bad_format = run_kts("sidecar", "--output-file", str(tmp_path / "t"), "--format", "yaml")
    assert bad_format.returncode == 2
    no_jwt = run_kts("sidecar", "--output-file", str(tmp_path / "t"), "--jwt-file", str(tmp_path / "absent"))
    assert no_jwt.returncode == 2
    assert "--jwt-file:" in no_jwt.stderr
    jwt_file = tmp_path / "jwt"
    jwt_file.write_text("a.b.c")
    both = run_kts(
        "sidecar", "--output-file", str(tmp_path / "t"), "--jwt-file", str(jwt_file),
        "--command-config", str(password_config(tmp_path, ALICE)),
    )  # fmt: skip
    assert both.returncode == 2
    assert "must not hold a login as well" in both.stderr


def test_stops_cleanly_while_the_service_is_down(sidecars: list, tmp_path: Path) -> None:
    """Started before the service, it waits with backoff, and a SIGTERM still ends it with 0."""
    log = tmp_path / "sidecar.log"
    sidecar = start_sidecar(
        sidecars,
        log,
        f"http://127.0.0.1:{free_port()}",
        password_config(tmp_path, ALICE),
        "--output-file", str(tmp_path / "token.json"),
        "--expire-on-exit",
    )  # fmt: skip
    eventually(lambda: log.read_text().count("retrying in") >= 2, PATIENCE_S)
    assert stop(sidecar) == 0
    assert not (tmp_path / "token.json").exists()


def test_a_jwt_file_replaced_mid_run_is_read_again(
    users: None, zk_connect: str, processes: list, sidecars: list, tmp_path: Path
) -> None:
    """No password anywhere: the sidecar logs in with a projected JWT. The kubelet's next token (here naming
    another service account, so that the test can tell which JWT a request carried) is picked up without a
    restart: the sidecar's next renewal is refused as the other principal, and it replaces the token."""
    signer = JwtKey.rsa("cluster-key")
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(signer)))
    url = serve(
        processes,
        tmp_path,
        free_port(),
        zk_connect,
        KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS=str(EXPIRY_MS),
        KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS="600000",
        KTS_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL=jwks_file.as_uri(),
        KTS_SASL_OAUTHBEARER_EXPECTED_ISSUER=ISSUER,
        KTS_SASL_OAUTHBEARER_EXPECTED_AUDIENCE=AUDIENCE,
    )
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    jwt_file = project_token(tokens, 1, signer.mint(sub=SPARK, lifetime_s=3600))
    out = tmp_path / "token.json"
    log = tmp_path / "sidecar.log"
    sidecar = subprocess.Popen(
        [*KTS, "sidecar", "--server", url, "--jwt-file", str(jwt_file), "--output-file", str(out),
         "--format", "json", "--expire-on-exit"],
        cwd=ROOT, env=client_env(), stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True,
    )  # fmt: skip
    sidecars.append(sidecar)

    eventually(lambda: read_json(out) is not None, PATIENCE_S)
    first = read_json(out)
    assert first is not None
    assert verify(url, first["tokenId"], first["hmac"]).json()["principal"] == f"User:{SPARK}"
    eventually(lambda: token_info(url, first["tokenId"]).json()["expiryTimestamp"] > first["expiryTimestamp"], 60)

    rotated = f"{SPARK}-v2"
    project_token(tokens, 2, signer.mint(sub=rotated, lifetime_s=3600))

    def owned_by_the_new_jwt() -> bool:
        now = read_json(out)
        return now is not None and verify(url, now["tokenId"], now["hmac"]).json().get("principal") == f"User:{rotated}"

    eventually(owned_by_the_new_jwt, PATIENCE_S)
    second = read_json(out)
    assert second is not None
    eventually(lambda: token_info(url, second["tokenId"]).json()["expiryTimestamp"] > second["expiryTimestamp"], 60)
    assert sidecar.poll() is None
    assert stop(sidecar) == 0
    assert token_info(url, second["tokenId"]).status_code == 404
    output = log.read_text()
    assert "renewed token" in output
    for secret in (first["hmac"], second["hmac"], jwt_file.read_text().split(".")[2]):
        assert secret not in output
