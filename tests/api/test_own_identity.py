"""kts's own identity is kts's alone, on the ZooKeeper backend: kts logs in to a real SASL ZooKeeper as ``kts``, and
an HTTP caller who comes out as ``User:kts`` (a SCRAM user of that name logging in over Basic, a JWT whose ``sub`` is
``kts``, a delegation token owned by ``User:kts``) is refused with 401 and a reason, audited. Then the Kafka
backend on the real KRaft broker, where kts logs in as ``kts`` and names ``User:kts`` a renewer of every token it
makes: whoever logged in to kts as ``kts`` could expire them all."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.backends import load_settings
from tests.api.backends import User, kafka_settings
from tests.api.conftest import ADMIN, basic, bearer, put_user
from tests.conftest import CLUSTER_ID, SECRET, ZK_SASL_USERS, SaslZooKeeper
from tests.jwt_material import AUDIENCE, ISSUER, JwtKey, jwks
from tests.kafka.brokers import RunningBroker

SIGNER = JwtKey.rsa("own-identity-key")
KTS = ("kts", "a-scram-password-someone-set-for-kts")  # the name kts logs in to ZooKeeper with
OWN_REFUSAL = "User:kts is the principal kts itself uses toward the Kafka cluster (its SASL login to ZooKeeper)"


@pytest.fixture
def kts_app(sasl_optional_zookeeper: SaslZooKeeper, tmp_path: Path) -> Iterator[dict[str, Any]]:
    connect = sasl_optional_zookeeper.chroot_connect()
    chroot = connect[connect.index("/") :]
    raw = sasl_optional_zookeeper.client("kts")
    try:
        raw.create(f"{chroot}/cluster/id", b'{"version":"1","id":"%s"}' % CLUSTER_ID.encode(), makepath=True)
        scoped = sasl_optional_zookeeper.client("kts", connect=connect)
        for name, password in (ADMIN, KTS):
            put_user(scoped, name, password)  # as kafka-configs.sh would: a SCRAM user named as kts's login
        scoped.stop()
        scoped.close()
    finally:
        raw.stop()
        raw.close()
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(SIGNER)))
    yield {
        "zookeeper_connect": connect,
        "zookeeper_sasl_username": "kts",
        "zookeeper_sasl_password": ZK_SASL_USERS["kts"],
        "delegation_token_secret_key": SECRET,
        "super_users": "User:admin",
        "service_id": "test",
        "audit_db_url": f"sqlite:///{tmp_path / 'audit.db'}",
        "auth_failures_max": 0,  # each refusal is audited in full
        "sasl_oauthbearer_jwks_endpoint_url": jwks_file.as_uri(),
        "sasl_oauthbearer_expected_issuer": ISSUER,
        "sasl_oauthbearer_expected_audience": AUDIENCE,
    }


def client_of(settings: dict[str, Any]) -> Iterator[TestClient]:
    with TestClient(create_app(load_settings(**settings)), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def client(kts_app: dict[str, Any]) -> Iterator[TestClient]:
    yield from client_of(kts_app)


def refusals(client: TestClient) -> list[dict[str, Any]]:
    response = client.get("/v1/audit", params={"action": "authentication"}, headers=basic(ADMIN))
    assert response.status_code == 200, response.text
    return [event for event in response.json()["events"] if event["outcome"] == "denied"]


def test_a_scram_user_named_as_kts_cannot_log_in_over_basic(client: TestClient) -> None:
    refused = client.get("/v1/tokens", headers=basic(KTS))
    assert refused.status_code == 401, refused.text
    assert refused.json()["message"].startswith(OWN_REFUSAL)
    assert refused.headers["WWW-Authenticate"].startswith("Basic")
    guessed = client.get("/v1/tokens", headers=basic(("kts", "a guess")))
    assert guessed.json()["message"] == refused.json()["message"]  # no oracle for kts's passwords
    first = refusals(client)[0]  # the burst's first in full (the lockout groups the rest)
    assert (first["principal"], first["details"]["scheme"]) == ("User:kts", "basic")
    assert first["details"]["reason"].startswith(OWN_REFUSAL)
    assert client.get("/v1/tokens", headers=basic(ADMIN)).status_code == 200  # everyone else as before


def test_a_jwt_whose_sub_is_kts_is_refused(client: TestClient) -> None:
    refused = client.get("/v1/tokens", headers={"Authorization": f"Bearer {SIGNER.mint(sub='kts')}"})
    assert refused.status_code == 401, refused.text
    assert refused.json()["message"].startswith(OWN_REFUSAL)
    (event,) = refusals(client)
    assert (event["principal"], event["details"]["scheme"]) == ("User:kts", "bearer")
    other = client.get("/v1/tokens", headers={"Authorization": f"Bearer {SIGNER.mint(sub='spark')}"})
    assert other.status_code == 200, other.text


def test_kts_makes_no_token_for_its_own_principal(client: TestClient) -> None:
    """A token authenticates as its owner, to the brokers too: not even a super user gets one for kts."""
    refused = client.post("/v1/tokens", json={"owner": "User:kts"}, headers=basic(ADMIN))
    assert (refused.status_code, refused.json()["code"]) == (403, 65), refused.text
    assert refused.json()["message"].startswith("User:kts is the principal kts itself uses toward the Kafka cluster")
    events = client.get("/v1/audit", params={"action": "token.create"}, headers=basic(ADMIN)).json()["events"]
    assert [(event["outcome"], event["owner"]) for event in events] == [("denied", "User:kts")]


def test_a_delegation_token_owned_by_kts_does_not_log_in(kts_app: dict[str, Any], client: TestClient) -> None:
    # Made for User:kts elsewhere (Kafka's tools; here a kts that logs in to ZooKeeper anonymously, so User:kts is
    # nobody special to it), on the same cluster.
    other = {key: value for key, value in kts_app.items() if not key.startswith("zookeeper_sasl_")}
    for elsewhere in client_of(other | {"audit_db_url": kts_app["audit_db_url"].replace("audit.db", "other.db")}):
        created = elsewhere.post("/v1/tokens", json={"owner": "User:kts"}, headers=basic(ADMIN))
        assert created.status_code == 201, created.text
        token = created.json()
    refused = client.get("/v1/tokens", headers=bearer(token))
    assert refused.status_code == 401, refused.text
    assert refused.json()["message"].startswith(OWN_REFUSAL)
    (event,) = refusals(client)
    assert (event["tokenId"], event["details"]["scheme"]) == (token["tokenId"], "bearer")


def test_start_up_names_a_shared_identity_once(kts_app: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="app.runtime")
    for _ in client_of(kts_app | {"super_users": "User:admin;User:kts"}):
        pass
    (warning,) = [record.getMessage() for record in caplog.records if "kts's own principal" in record.getMessage()]
    assert warning.startswith("User:kts is kts's own principal toward the Kafka cluster (its SASL login to ZooKeeper)")
    assert "super.users names it and a SCRAM user of that name exists on the cluster" in warning
    assert "give kts a principal of its own" in warning
    assert ZK_SASL_USERS["kts"] not in warning and KTS[1] not in warning


KAFKA_REFUSAL = "User:kts is the principal kts itself uses toward the Kafka cluster (its login to the brokers"


def test_on_kraft_kts_login_cannot_be_used_to_expire_the_tokens_kts_made(
    kafka_kraft_broker: RunningBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broker = kafka_kraft_broker
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text(json.dumps(jwks(SIGNER)))
    settings = kafka_settings(broker, f"sqlite:///{tmp_path / 'audit.db'}") | {
        "auth_failures_max": 0,
        "super_users": f"User:{broker.admin.name};{broker.kts.principal}",  # the warning's case
        "sasl_oauthbearer_jwks_endpoint_url": jwks_file.as_uri(),
        "sasl_oauthbearer_expected_issuer": ISSUER,
        "sasl_oauthbearer_expected_audience": AUDIENCE,
    }
    made = broker.new_user("alice")
    alice, kts, admin = User(made.name, made.password), User(broker.kts.name, broker.kts.password), broker.admin
    caplog.set_level(logging.WARNING, logger="app.runtime")
    for client in client_of(settings):
        created = client.post("/v1/tokens", json={}, headers=alice.basic)
        assert created.status_code == 201, created.text
        token = created.json()
        assert token["renewers"] == [broker.kts.principal]  # why kts's login must never be a caller's
        refused = client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=kts.basic)
        assert refused.status_code == 401, refused.text
        assert refused.json()["message"].startswith(KAFKA_REFUSAL)
        as_jwt = {"Authorization": f"Bearer {SIGNER.mint(sub=broker.kts.name)}"}
        refused_jwt = client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=as_jwt)
        assert refused_jwt.status_code == 401, refused_jwt.text
        assert refused_jwt.json()["message"].startswith(KAFKA_REFUSAL)
        admin_basic = basic((admin.name, admin.password))
        for_kts = client.post("/v1/tokens", json={"owner": broker.kts.principal}, headers=admin_basic)
        assert (for_kts.status_code, for_kts.json()["code"]) == (403, 65), for_kts.text  # no token logs in as kts
        shown = client.get(f"/v1/tokens/{token['tokenId']}", headers=alice.basic).json()
        assert shown["expiryTimestamp"] == token["expiryTimestamp"]  # alive and untouched
        events = client.get("/v1/audit", params={"action": "authentication"}, headers=admin_basic).json()["events"]
        # the burst's first refusal in full (the JWT's, of the same principal, is counted in its burst)
        (first,) = [event for event in events if event["principal"] == "User:kts" and "reason" in event["details"]]
        assert (first["details"]["scheme"], first["outcome"]) == ("basic", "denied")
        assert first["details"]["reason"].startswith(KAFKA_REFUSAL)
    warnings = [record.getMessage() for record in caplog.records if "kts's own principal" in record.getMessage()]
    # kts's own SCRAM credential is not counted as a shared one; super.users naming it is
    assert warnings == [
        "User:kts is kts's own principal toward the Kafka cluster (its login to the brokers, admin.sasl.jaas.config), "
        "and super.users names it: kts refuses every HTTP login as it, so whoever uses that login gets 401; give kts a "
        "principal of its own (docs/deployment.md)"
    ]
