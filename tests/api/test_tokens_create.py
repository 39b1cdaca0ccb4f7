"""POST /v1/tokens on a real ZooKeeper: Kafka's wire format, create semantics, and refusals."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests.api.backends import Cluster, User
from tests.api.conftest import ADMIN, ALICE, BOB, basic, bearer
from tests.api.helpers import notifications, token_state
from tests.conftest import SECRET

DAY = 86_400_000
WEEK = 7 * DAY


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_token_znode_is_exactly_what_a_kafka_3_broker_writes(client: TestClient, raw_zk: KazooClient) -> None:
    response = client.post("/v1/tokens", json={"renewers": ["User:bob"]}, headers=basic(ALICE))
    assert response.status_code == 201
    token = response.json()
    data, _ = raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")
    expected = (
        f'{{"issueTimestamp":{token["issueTimestamp"]},"renewers":["User%3Abob"],'
        f'"tokenRequester":"User%3Aalice","tokenId":"{token["tokenId"]}","owner":"User%3Aalice",'
        f'"expiryTimestamp":{token["expiryTimestamp"]},"maxTimestamp":{token["maxTimestamp"]},"version":3}}'
    )
    assert data == expected.encode()
    assert notifications(raw_zk) == [token["tokenId"].encode()]
    assert raw_zk.get_children(TokenChangeZNode.ROOT) == ["token_change_0000000000"]


def test_hmac_is_hmac_sha512_of_the_token_id_with_the_secret(client: TestClient, alice: User) -> None:
    token = client.post("/v1/tokens", json={}, headers=alice.basic).json()
    expected = hmac.new(SECRET.encode(), token["tokenId"].encode(), hashlib.sha512).digest()
    assert base64.b64decode(token["hmac"]) == expected
    assert len(token["tokenId"]) == 22
    assert len(base64.urlsafe_b64decode(token["tokenId"] + "==")) == 16


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_version_1_znodes_for_brokers_older_than_3_3(
    make_client: Callable[..., TestClient], raw_zk: KazooClient, client: TestClient
) -> None:
    v1 = make_client(token_znode_version=1)
    token = v1.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    doc = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")[0])
    assert doc["version"] == 1
    assert "tokenRequester" not in doc
    assert list(doc) == ["issueTimestamp", "renewers", "tokenId", "owner", "expiryTimestamp", "maxTimestamp", "version"]


def test_defaults_owner_is_caller_and_lifetimes_from_settings(client: TestClient, kts: Cluster, alice: User) -> None:
    token = client.post("/v1/tokens", json={}, headers=alice.basic).json()
    assert token["owner"] == token["tokenRequester"] == alice.principal
    # over the Kafka protocol kts names itself a renewer, to renew and expire for its callers (by design)
    assert token["renewers"] == ([kts.kts_principal] if kts.protocol else [])
    assert token["maxTimestamp"] - token["issueTimestamp"] == WEEK
    assert token["expiryTimestamp"] - token["issueTimestamp"] == DAY


@pytest.mark.parametrize(
    ("requested", "lifetime"),
    [(-1, WEEK), (0, WEEK), (-(2**63), WEEK), (3_600_000, 3_600_000), (WEEK + 1, WEEK), (2**63 - 1, WEEK)],
)
def test_max_lifetime_is_clamped_never_refused(client: TestClient, requested: int, lifetime: int, alice: User) -> None:
    response = client.post("/v1/tokens", json={"maxLifetimeMs": requested}, headers=alice.basic)
    assert response.status_code == 201
    token = response.json()
    assert token["maxTimestamp"] - token["issueTimestamp"] == lifetime
    assert token["expiryTimestamp"] == min(token["maxTimestamp"], token["issueTimestamp"] + DAY)


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_renewers_must_be_users(client: TestClient, raw_zk: KazooClient) -> None:
    before = token_state(raw_zk)
    response = client.post("/v1/tokens", json={"renewers": ["User:bob", "Group:ops"]}, headers=basic(ALICE))
    assert response.status_code == 400
    assert response.json()["code"] == 67
    assert response.json()["error"] == "INVALID_PRINCIPAL_TYPE"
    assert token_state(raw_zk) == before


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_other_owner_refused_without_authorization(client: TestClient, raw_zk: KazooClient) -> None:
    before = token_state(raw_zk)
    response = client.post("/v1/tokens", json={"owner": "User:bob"}, headers=basic(ALICE))
    assert response.status_code == 403
    assert response.json()["code"] == 65
    assert token_state(raw_zk) == before


def test_authorization_failure_comes_before_principal_type(client: TestClient, alice: User, bob: User) -> None:
    response = client.post("/v1/tokens", json={"owner": bob.principal, "renewers": ["Group:x"]}, headers=alice.basic)
    assert response.json()["code"] == 65


def test_naming_yourself_as_owner_needs_no_authorization(client: TestClient, alice: User) -> None:
    response = client.post("/v1/tokens", json={"owner": alice.principal}, headers=alice.basic)
    assert response.status_code == 201


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_super_user_creates_for_another_owner_and_is_recorded_as_requester(
    client: TestClient, raw_zk: KazooClient
) -> None:
    response = client.post("/v1/tokens", json={"owner": "User:bob"}, headers=basic(ADMIN))
    assert response.status_code == 201
    token = response.json()
    assert (token["owner"], token["tokenRequester"]) == ("User:bob", "User:admin")
    doc = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")[0])
    assert (doc["owner"], doc["tokenRequester"]) == ("User%3Abob", "User%3Aadmin")
    who = client.post(
        "/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=basic(BOB)
    )
    assert who.json()["principal"] == "User:bob"


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_token_authenticated_caller_cannot_create(client: TestClient, raw_zk: KazooClient) -> None:
    token = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    before = token_state(raw_zk)
    response = client.post("/v1/tokens", json={}, headers=bearer(token))
    assert response.status_code == 403
    assert response.json() == {
        "error": "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        "message": response.json()["message"],
        "code": 64,
    }
    assert token_state(raw_zk) == before


def test_owner_of_another_type_is_refused(client: TestClient, admin: User) -> None:
    response = client.post("/v1/tokens", json={"owner": "Group:ops"}, headers=admin.basic)
    assert response.status_code == 400
    assert response.json()["code"] == 67


@pytest.mark.only_on("zookeeper", "asserts the token znodes byte for byte as a Kafka 3 broker writes them")
def test_unicode_principals_are_sanitized_like_kafka(client: TestClient, raw_zk: KazooClient) -> None:
    response = client.post("/v1/tokens", json={"renewers": ["User:é", "User:CN=a b,O=x*y~z+w"]}, headers=basic(ALICE))
    assert response.status_code == 201
    token = response.json()
    doc = json.loads(raw_zk.get(f"{TokenZNode.ROOT}/{token['tokenId']}")[0])
    assert doc["renewers"] == ["User%3A%C3%A9", "User%3ACN%3Da%20b%2CO%3Dx%2Ay%7Ez%2Bw"]
    assert token["renewers"] == ["User:é", "User:CN=a b,O=x*y~z+w"]
