"""/v1/acls on a real ZooKeeper: Kafka's znodes and notifications, who may manage, and bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from tests.api.backends import User
from tests.api.conftest import ADMIN, ALICE, CAROL, basic, bearer, put_user
from tests.api.helpers import eventually, kafka_acls_sh_writes

NIMBUS = ("nimbus", "nimbus-pw")


def _acl(**fields: str) -> dict[str, Any]:
    acl = {
        "resourceType": "User",
        "resourceName": "User:joe",
        "patternType": "LITERAL",
        "principal": "User:nimbus",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }
    acl.update(fields)
    return acl


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_create_writes_kafkas_znode_and_notification(client: TestClient, raw_zk: KazooClient) -> None:
    response = client.post("/v1/acls", json=_acl(), headers=basic(ADMIN))
    assert response.status_code == 201
    assert response.json() == _acl()
    data, _ = raw_zk.get("/kafka-acl/User/User:joe")
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:nimbus","permissionType":"Allow",'
        b'"operation":"CreateTokens","host":"*"}]}'
    )
    changes = raw_zk.get_children("/kafka-acl-changes")
    assert [raw_zk.get(f"/kafka-acl-changes/{name}")[0] for name in changes] == [b"USER:User:joe"]
    assert changes[0].startswith("acl_changes_")


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_prefixed_acls_use_the_extended_store(client: TestClient, raw_zk: KazooClient) -> None:
    client.post("/v1/acls", json=_acl(patternType="PREFIXED", resourceName="User:etl-"), headers=basic(ADMIN))
    assert raw_zk.exists("/kafka-acl-extended/prefixed/User/User:etl-")
    (name,) = raw_zk.get_children("/kafka-acl-extended-changes")
    notice = json.loads(raw_zk.get(f"/kafka-acl-extended-changes/{name}")[0])
    assert notice == {"version": 1, "resourceType": "USER", "name": "User:etl-", "patternType": "PREFIXED"}


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_adding_twice_is_idempotent_and_entries_accumulate(client: TestClient, raw_zk: KazooClient) -> None:
    client.post("/v1/acls", json=_acl(), headers=basic(ADMIN))
    client.post("/v1/acls", json=_acl(), headers=basic(ADMIN))
    client.post("/v1/acls", json=_acl(operation="DescribeTokens"), headers=basic(ADMIN))
    acls = json.loads(raw_zk.get("/kafka-acl/User/User:joe")[0])["acls"]
    assert sorted(a["operation"] for a in acls) == ["CreateTokens", "DescribeTokens"]
    assert len(raw_zk.get_children("/kafka-acl-changes")) == 2  # no write, no notification for the repeat


def test_list_and_filter(client: TestClient, admin: User, alice: User) -> None:
    mine = {"principal": alice.principal}  # the ACLs of the test's own principal (a broker's are shared)
    client.post("/v1/acls", json=_acl(**mine), headers=admin.basic)
    client.post("/v1/acls", json=_acl(resourceName="User:mary", permissionType="Deny", **mine), headers=admin.basic)
    client.post(
        "/v1/acls",
        json=_acl(resourceType="DelegationToken", resourceName="tok", operation="Describe", **mine),
        headers=admin.basic,
    )
    everything = client.get("/v1/acls", params=mine, headers=admin.basic).json()["acls"]
    assert len(everything) == 3
    denies = client.get("/v1/acls", params=mine | {"permissionType": "Deny"}, headers=admin.basic).json()["acls"]
    assert [a["resourceName"] for a in denies] == ["User:mary"]
    tokens = client.get("/v1/acls", params=mine | {"resourceType": "DelegationToken"}, headers=admin.basic).json()
    tokens = tokens["acls"]
    assert [a["operation"] for a in tokens] == ["Describe"]


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_delete_by_filter_removes_znode_when_empty(client: TestClient, raw_zk: KazooClient) -> None:
    client.post("/v1/acls", json=_acl(), headers=basic(ADMIN))
    client.post("/v1/acls", json=_acl(operation="DescribeTokens"), headers=basic(ADMIN))
    first = client.delete("/v1/acls?operation=DescribeTokens", headers=basic(ADMIN))
    assert [a["operation"] for a in first.json()["deleted"]] == ["DescribeTokens"]
    assert raw_zk.exists("/kafka-acl/User/User:joe")
    second = client.delete("/v1/acls?resourceName=User:joe", headers=basic(ADMIN))
    assert [a["operation"] for a in second.json()["deleted"]] == ["CreateTokens"]
    assert raw_zk.exists("/kafka-acl/User/User:joe") is None
    assert client.delete("/v1/acls?resourceName=User:joe", headers=basic(ADMIN)).json() == {"deleted": []}


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_empty_delete_filter_is_refused(client: TestClient, raw_zk: KazooClient) -> None:
    client.post("/v1/acls", json=_acl(), headers=basic(ADMIN))
    response = client.delete("/v1/acls", headers=basic(ADMIN))
    assert response.status_code == 422
    assert response.json()["error"] == "INVALID_REQUEST"
    assert raw_zk.exists("/kafka-acl/User/User:joe")


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_managing_acls_needs_alter_on_the_cluster(client: TestClient, raw_zk: KazooClient) -> None:
    refused = client.post("/v1/acls", json=_acl(), headers=basic(ALICE))
    assert refused.status_code == 403
    assert refused.json()["code"] == 31
    assert client.get("/v1/acls", headers=basic(ALICE)).status_code == 403
    assert client.delete("/v1/acls?principal=User:nimbus", headers=basic(ALICE)).status_code == 403
    assert raw_zk.exists("/kafka-acl/User/User:joe") is None
    cluster_admin = _acl(
        resourceType="Cluster", resourceName="kafka-cluster", principal="User:alice", operation="Alter"
    )
    assert client.post("/v1/acls", json=cluster_admin, headers=basic(ADMIN)).status_code == 201
    assert client.post("/v1/acls", json=_acl(), headers=basic(ALICE)).status_code == 201
    assert client.get("/v1/acls", headers=basic(ALICE)).status_code == 200  # Alter implies Describe


def test_describe_on_the_cluster_lists_but_cannot_change(client: TestClient, admin: User, bob: User) -> None:
    reader = _acl(resourceType="Cluster", resourceName="kafka-cluster", principal=bob.principal, operation="Describe")
    client.post("/v1/acls", json=reader, headers=admin.basic)
    assert client.get("/v1/acls", headers=bob.basic).status_code == 200
    assert client.post("/v1/acls", json=_acl(), headers=bob.basic).status_code == 403


def test_token_authenticated_callers_cannot_change_acls(client: TestClient, admin: User) -> None:
    token = client.post("/v1/tokens", json={}, headers=admin.basic).json()
    assert client.post("/v1/acls", json=_acl(), headers=bearer(token)).status_code == 403
    assert client.get("/v1/acls", headers=bearer(token)).status_code == 200  # super user may look


@pytest.mark.parametrize(
    "changes",
    [
        {"resourceType": "Topic", "resourceName": "orders", "operation": "Read"},
        {"resourceType": "Nonsense"},
        {"operation": "Fly"},
        {"operation": "Alter"},
        {"resourceType": "DelegationToken", "resourceName": "tok", "operation": "CreateTokens"},
        {"resourceType": "Cluster", "resourceName": "kafka-cluster", "operation": "CreateTokens"},
        {"resourceType": "Cluster", "resourceName": "other"},
        {"permissionType": "Maybe"},
        {"principal": "nimbus"},
        {"principal": "User:"},
        {"host": "example.com"},
        {"resourceName": "User:a/b"},
        {"resourceName": "joe"},
        {"patternType": "MATCH"},
        {"resourceName": ""},
        {"extra": "field"},
    ],
)
@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_bad_acls_get_a_4xx_envelope_and_write_nothing(
    client: TestClient, raw_zk: KazooClient, changes: dict[str, str]
) -> None:
    before = raw_zk.get_children("/kafka-acl-changes")
    response = client.post("/v1/acls", json=_acl(**changes), headers=basic(ADMIN))
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "INVALID_REQUEST"
    assert body["message"]
    assert raw_zk.get_children("/kafka-acl-changes") == before


def test_bad_filters(client: TestClient, admin: User) -> None:
    assert client.get("/v1/acls?patternType=ANY", headers=admin.basic).status_code == 422
    assert client.get("/v1/acls?principal=", headers=admin.basic).status_code == 422


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_acls_written_by_kafka_acls_sh_are_honoured_and_preserved(client: TestClient, raw_zk: KazooClient) -> None:
    put_user(raw_zk, *NIMBUS)
    kafka_acls_sh_writes(
        raw_zk,
        "User",
        "User:joe",
        [
            {"principal": "User:nimbus", "permissionType": "Allow", "operation": "CreateTokens", "host": "*"},
            {"principal": "User:other", "permissionType": "Allow", "operation": "IdempotentWrite", "host": "*"},
        ],
    )
    eventually(lambda: client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS)).status_code == 201)
    # a kts change to the same resource keeps the entry kts does not manage
    client.post("/v1/acls", json=_acl(operation="DescribeTokens"), headers=basic(ADMIN))
    operations = {a["operation"] for a in json.loads(raw_zk.get("/kafka-acl/User/User:joe")[0])["acls"]}
    assert operations == {"CreateTokens", "IdempotentWrite", "DescribeTokens"}
    # removal through kafka-acls.sh takes effect too
    kafka_acls_sh_writes(raw_zk, "User", "User:joe", [])
    eventually(lambda: client.post("/v1/tokens", json={"owner": "User:joe"}, headers=basic(NIMBUS)).status_code == 403)


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_allow_everyone_if_no_acl_found(make_client: Any, raw_zk: KazooClient, client: TestClient) -> None:
    lenient = make_client(allow_everyone_if_no_acl_found=True)
    assert lenient.post("/v1/tokens", json={"owner": "User:bob"}, headers=basic(CAROL)).status_code == 201
    client.post("/v1/acls", json=_acl(resourceName="User:bob", principal="User:alice"), headers=basic(ADMIN))
    eventually(lambda: lenient.post("/v1/tokens", json={"owner": "User:bob"}, headers=basic(CAROL)).status_code == 403)


@pytest.mark.only_on("zookeeper", "asserts Kafka's ACL znodes and their change notifications")
def test_a_deny_for_a_host_as_kafka_prints_it_is_enforced_for_a_client_at_its_short_form(
    make_client: Any, raw_zk: KazooClient, client: TestClient
) -> None:
    put_user(raw_zk, *NIMBUS)
    client.post("/v1/acls", json=_acl(), headers=basic(ADMIN))
    response = client.post("/v1/acls", json=_acl(permissionType="Deny", host="0:0:0:0:0:0:0:1"), headers=basic(ADMIN))
    assert response.status_code == 201
    at_ipv6_loopback = make_client(address=("::1", 50000))
    at_ipv4_loopback = make_client(address=("127.0.0.1", 50000))
    eventually(lambda: client.get("/v1/acls?host=0:0:0:0:0:0:0:1", headers=basic(ADMIN)).json() != [])
    create = {"json": {"owner": "User:joe"}, "headers": basic(NIMBUS)}
    eventually(lambda: at_ipv4_loopback.post("/v1/tokens", **create).status_code == 201)  # the Allow works
    refused = at_ipv6_loopback.post("/v1/tokens", **create)
    assert refused.status_code == 403
    assert refused.json()["code"] == 65
