"""kts on real brokers through the Kafka protocol, with Kafka's own Java tools on the other side: a Java client
logs in with a token kts minted on KRaft until kts expires it; a token minted with kafka-delegation-tokens.sh is
served, renewed and expired through kts; an operator moves kts from zookeeper.connect to bootstrap.servers on
the 3.9 cluster they run and keeps every token; start-up refusals are one line; a broker down during a create
answers 503 with Retry-After and leaves the audit trail consistent."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.backends import check_cluster
from app.domain.audit import EventQuery
from app.domain.errors import StoreUnavailable
from app.domain.secret_fingerprint import SecretKeyMismatch
from app.domain.token_secret import TokenSecret, encode_hmac
from app.settings import load_settings
from tests.api.backends import User, kafka_settings
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.kafka.brokers import RunningBroker, start_kraft_broker
from tests.kafka.brokers import User as BrokerUser


def _client(settings: dict[str, Any]) -> TestClient:
    client = TestClient(create_app(load_settings(**settings)), raise_server_exceptions=False)
    client.__enter__()
    return client


def _user(broker: RunningBroker, prefix: str) -> User:
    made = broker.new_user(prefix)
    return User(made.name, made.password)


@pytest.mark.kafka_matrix("token-login", "expire-renew")
def test_a_java_client_logs_in_with_a_token_kts_minted_on_kraft_until_kts_expires_it(
    kafka_kraft_broker: RunningBroker, tmp_path: Path
) -> None:
    broker = kafka_kraft_broker
    client = _client(kafka_settings(broker, f"sqlite:///{tmp_path / 'audit.db'}"))
    try:
        admin = User(broker.admin.name, broker.admin.password)
        token = client.post("/v1/tokens", json={}, headers=admin.basic).json()
        as_token = BrokerUser(token["tokenId"], token["hmac"])
        # kafka-acls.sh --list, a Java admin client logged in with the token (SCRAM, tokenauth=true)
        eventually(lambda: broker.acls("--list", user=as_token, token=True, check=False).returncode == 0, 60)
        assert client.post(f"/v1/tokens/{token['tokenId']}/expire", json={}, headers=admin.basic).status_code == 200
        refused = broker.acls("--list", user=as_token, token=True, check=False)
        assert refused.returncode != 0
        assert "Authentication failed" in refused.stdout + refused.stderr
    finally:
        client.__exit__(None, None, None)


def _created_token_id(output: str) -> str:
    found = re.search(r"tokenId\s*:\s*(\S+)", output) or re.search(r"^([A-Za-z0-9_-]{22})\s", output, re.MULTILINE)
    assert found is not None, output
    return found.group(1)


@pytest.fixture(params=["kafka_kraft_broker", "kafka_zk_broker"])
def protocol_broker(request: pytest.FixtureRequest) -> RunningBroker:
    """Each broker, kts on its ``bootstrap.servers``: KRaft, and a ZooKeeper-mode broker (which serves the token,
    ACL and SCRAM RPCs too)."""
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.mark.kafka_matrix("broker-token")
def test_a_token_minted_with_kafka_delegation_tokens_sh_is_served_renewed_and_expired_through_kts(
    protocol_broker: RunningBroker, tmp_path: Path
) -> None:
    broker = protocol_broker
    alice = _user(broker, "alice")
    kts = broker.kts.principal  # kts's own principal on this cluster
    made = broker.tokens(
        "--create",
        "--max-life-time-period",
        "-1",
        "--renewer-principal",
        kts,
        user=BrokerUser(alice.name, alice.password),
    )
    token_id = _created_token_id(made.stdout)
    mac = encode_hmac(TokenSecret(SECRET).hmac(token_id))
    client = _client(kafka_settings(broker, f"sqlite:///{tmp_path / 'audit.db'}"))
    try:
        eventually(lambda: client.get(f"/v1/tokens/{token_id}", headers=alice.basic).status_code == 200, 30)
        shown = client.get(f"/v1/tokens/{token_id}", headers=alice.basic).json()
        assert (shown["owner"], shown["tokenRequester"], shown["renewers"]) == (alice.principal, alice.principal, [kts])
        bearer = {"Authorization": f"Bearer {token_id}:{mac}"}
        assert client.get("/v1/tokens", headers=bearer).status_code == 200
        renewed = client.post("/v1/tokens/renew", json={"hmac": mac, "renewTimePeriodMs": 60_000}, headers=alice.basic)
        assert renewed.status_code == 200, renewed.text
        expired = client.post(f"/v1/tokens/{token_id}/expire", json={}, headers=alice.basic)
        assert expired.status_code == 200, expired.text
        assert client.get("/v1/tokens", headers=bearer).status_code == 401
        described = broker.tokens("--describe", "--owner-principal", alice.principal).stdout
        assert token_id not in described
    finally:
        client.__exit__(None, None, None)


@pytest.mark.kafka_matrix("acls-tool", "kip-373")
def test_a_grant_made_with_kafka_acls_sh_lets_kts_create_for_another_owner(
    protocol_broker: RunningBroker, tmp_path: Path
) -> None:
    """kafka-acls.sh of the broker's release grants CreateTokens on a user (KIP-373); kts, reading the cluster's
    ACLs through the protocol, lets the grantee create that user's tokens."""
    broker = protocol_broker
    nimbus, mary = _user(broker, "nimbus"), _user(broker, "mary")
    client = _client(kafka_settings(broker, f"sqlite:///{tmp_path / 'audit.db'}"))
    try:
        refused = client.post("/v1/tokens", json={"owner": mary.principal}, headers=nimbus.basic)
        assert refused.status_code == 403, refused.text
        broker.acls(
            "--add", "--allow-principal", nimbus.principal, "--operation", "CreateTokens",
            "--user-principal", mary.principal,
        )  # fmt: skip
        statuses: list[int] = []

        def honoured() -> bool:
            answer = client.post("/v1/tokens", json={"owner": mary.principal}, headers=nimbus.basic)
            statuses.append(answer.status_code)
            return answer.status_code == 201

        eventually(honoured, timeout_s=60)
        made = client.get("/v1/tokens", params={"owner": mary.principal}, headers=nimbus.basic).json()["tokens"]
        assert {(t["owner"], t["tokenRequester"]) for t in made} == {(mary.principal, nimbus.principal)}
        print(f"kts answered {statuses} after kafka-acls.sh granted CreateTokens on {mary.principal}")
    finally:
        client.__exit__(None, None, None)


@pytest.mark.kafka_matrix("broker-token")
def test_tokens_kafka_tools_made_without_kts_among_the_renewers_are_served_but_not_renewed(
    protocol_broker: RunningBroker, tmp_path: Path
) -> None:
    """On the protocol only owner and renewers may renew: kts says so (63) instead of pretending."""
    broker = protocol_broker
    alice = _user(broker, "alice")
    token_id = _created_token_id(
        broker.tokens("--create", "--max-life-time-period", "-1", user=BrokerUser(alice.name, alice.password)).stdout
    )
    client = _client(kafka_settings(broker, f"sqlite:///{tmp_path / 'audit.db'}"))
    try:
        eventually(lambda: client.get(f"/v1/tokens/{token_id}", headers=alice.basic).status_code == 200, 30)
        refused = client.post(f"/v1/tokens/{token_id}/renew", json={}, headers=alice.basic)
        assert refused.status_code == 403 and refused.json()["code"] == 63
        assert "renewer" in refused.json()["message"]
    finally:
        client.__exit__(None, None, None)


def test_moving_from_zookeeper_connect_to_bootstrap_servers_keeps_every_token(
    kafka_zk_broker: RunningBroker, tmp_path: Path
) -> None:
    broker = kafka_zk_broker
    assert broker.zookeeper_connect is not None
    alice = _user(broker, "alice")
    admin = User(broker.admin.name, broker.admin.password)
    audit = f"sqlite:///{tmp_path / 'audit.db'}"
    zookeeper_mode = {
        "zookeeper_connect": broker.zookeeper_connect,
        "delegation_token_secret_key": broker.secret,
        "super_users": f"User:{admin.name}",
        "service_id": "test",
        "audit_db_url": audit,
    }
    before = _client(zookeeper_mode)
    try:
        made = [
            before.post(
                "/v1/tokens", json={"owner": alice.principal, "renewers": ["User:ops"]}, headers=admin.basic
            ).json(),
            before.post("/v1/tokens", json={"maxLifetimeMs": 3_600_000}, headers=alice.basic).json(),
        ]
        assert all("tokenId" in token for token in made), made
    finally:
        before.__exit__(None, None, None)
    after = _client(kafka_settings(broker, audit))
    try:
        for token in made:
            eventually(
                lambda token=token: after.get(f"/v1/tokens/{token['tokenId']}", headers=admin.basic).status_code == 200,
                30,
            )
            shown = after.get(f"/v1/tokens/{token['tokenId']}", headers=admin.basic).json()
            for key in ("owner", "tokenRequester", "renewers", "issueTimestamp", "expiryTimestamp", "maxTimestamp"):
                assert shown[key] == token[key], key
            verified = after.post(
                "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=admin.basic
            )
            assert verified.status_code == 200
        # Tokens kts wrote to ZooKeeper do not name kts's principal among their renewers, and on the protocol only
        # owners and renewers may renew or expire: kts says so (63), the owner's Kafka tools still can.
        refused = after.post(f"/v1/tokens/{made[1]['tokenId']}/expire", json={}, headers=alice.basic)
        assert refused.status_code == 403 and refused.json()["code"] == 63, refused.text
    finally:
        after.__exit__(None, None, None)


def test_start_refusals_are_one_line(kafka_kraft_broker: RunningBroker, tmp_path: Path) -> None:
    settings = kafka_settings(kafka_kraft_broker, f"sqlite:///{tmp_path / 'audit.db'}")
    wrong_secret = load_settings(**(settings | {"delegation_token_secret_key": "not-the-cluster-secret"}))
    with pytest.raises(SecretKeyMismatch) as mismatch:
        check_cluster(wrong_secret)
    assert "\n" not in str(mismatch.value) and "not-the-cluster-secret" not in str(mismatch.value)
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kts" password="wrong";'
    with pytest.raises(StoreUnavailable) as refused:
        check_cluster(load_settings(**(settings | {"admin_sasl_jaas_config": jaas, "admin_request_timeout_ms": 3_000})))
    assert "refused kts's login" in refused.value.message and "wrong" not in refused.value.message
    with pytest.raises(StoreUnavailable) as unreachable:
        check_cluster(
            load_settings(**(settings | {"bootstrap_servers": "127.0.0.1:1", "admin_request_timeout_ms": 2_000}))
        )
    assert "cannot reach the brokers at 127.0.0.1:1" in unreachable.value.message
    plaintext = settings | {"admin_security_protocol": "PLAINTEXT", "admin_sasl_jaas_config": None}
    with pytest.raises(Exception) as wrong_listener:
        check_cluster(load_settings(**(plaintext | {"admin_request_timeout_ms": 2_000})))
    assert "\n" not in str(wrong_listener.value)


def test_a_broker_down_during_a_create_answers_503_and_the_audit_trail_stays_consistent(tmp_path: Path) -> None:
    broker = start_kraft_broker(tmp_path / f"kraft-{uuid.uuid4().hex[:6]}", SECRET)
    client = None
    try:
        settings = kafka_settings(broker, f"sqlite:///{tmp_path / 'audit.db'}") | {"admin_request_timeout_ms": 3_000}
        client = _client(settings)
        admin = User(broker.admin.name, broker.admin.password)
        assert client.post("/v1/tokens", json={}, headers=admin.basic).status_code == 201
        broker.broker.stop()
        response = client.post("/v1/tokens", json={}, headers=admin.basic)  # the password is remembered
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"]
        eventually(lambda: client.get("/readyz").status_code == 503, 30)
        assert client.get("/readyz").json()["reason"] == "cluster"  # a word for strangers; operators see which
        status = client.get("/v1/cluster/status", headers=admin.basic).json()  # the password is remembered
        assert status["checks"]["cluster"].startswith("kafka connection lost")
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        creates = runtime.audit_log.query(EventQuery(action="token.create", limit=10))
        outcomes = sorted(event.outcome for event in creates)
        assert outcomes == ["pending", "succeeded"]  # the failed one awaits the reconciler: never "succeeded"
        assert [event.token_id for event in creates if event.outcome == "pending"] == [None]
    finally:
        if client is not None:
            client.__exit__(None, None, None)
        broker.broker.stop()
