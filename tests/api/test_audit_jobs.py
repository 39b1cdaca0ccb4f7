"""Which job holds which token: the ``job`` a create names is kept in its ``token.create`` audit event (allowed or
denied) and nowhere else, ``GET /v1/audit`` filters by it and ``kts audit`` too, on SQLite and on a real
PostgreSQL server; a bad job is a 422 that records nothing."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.cli.client import audit as audit_command
from app.cli.client.command_config import CommandConfig, UserPassword
from app.cli.client.http_client import KtsClient
from app.cli.main import _parser
from tests.api.conftest import ADMIN, ALICE, basic
from tests.api.helpers import token_state

pytestmark = pytest.mark.only_on("zookeeper", "two tests read the token znodes; the rest log in as the fixed users")

SPARK_JOB = {"framework": "spark", "id": "app-20261128093000-0001", "name": "nightly-etl", "user": "joe"}


@pytest.fixture
def audit_db_url(any_audit_db: str) -> str:
    return any_audit_db


def create(client: TestClient, user: tuple[str, str] = ALICE, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/tokens", json=body, headers=basic(user))
    assert response.status_code == 201, response.text
    return dict(response.json())


def events(client: TestClient, **filters: str) -> list[dict[str, Any]]:
    response = client.get("/v1/audit", params={"limit": "1000", **filters}, headers=basic(ADMIN))
    assert response.status_code == 200, response.text
    return list(response.json()["events"])


def creates(client: TestClient, **filters: str) -> list[dict[str, Any]]:
    return [event for event in events(client, action="token.create", **filters)]


def test_a_leaked_token_leads_to_its_job(client: TestClient, raw_zk: KazooClient) -> None:
    token = create(client, job=SPARK_JOB)
    (event,) = events(client, tokenId=token["tokenId"])
    assert (event["action"], event["outcome"], event["tokenId"]) == ("token.create", "succeeded", token["tokenId"])
    assert event["job"] == SPARK_JOB
    assert (event["principal"], event["owner"]) == ("User:alice", "User:alice")
    # Only in the audit trail: the token as the cluster holds it has no room for a job.
    assert not any(value in repr(token_state(raw_zk)) for value in ("nightly-etl", "app-20261128093000-0001"))
    assert set(token) == {
        "tokenId", "owner", "tokenRequester", "renewers", "issueTimestamp", "expiryTimestamp", "maxTimestamp",
        "expired", "hmac",
    }  # fmt: skip


def test_every_event_carries_job_null_when_absent(client: TestClient) -> None:
    plain = create(client)
    empty = create(client, job={})
    nulled = create(client, job=None)
    partial = create(client, job={"framework": "flink"})
    by_token = {event["tokenId"]: event for event in events(client) if event["tokenId"]}
    assert by_token[plain["tokenId"]]["job"] is None
    assert by_token[empty["tokenId"]]["job"] is None  # {} names nothing
    assert by_token[nulled["tokenId"]]["job"] is None
    assert by_token[partial["tokenId"]]["job"] == {"framework": "flink", "id": None, "name": None, "user": None}
    assert all("job" in event for event in events(client))  # reads and logins too: the key is always there


def test_the_filters_find_the_creates_of_a_job(client: TestClient) -> None:
    first = create(client, job=SPARK_JOB)
    second = create(client, job=SPARK_JOB)
    other = create(client, job={**SPARK_JOB, "id": "app-20261128093000-0002", "user": "ann"})
    flink = create(client, job={"framework": "flink", "id": "a1b2c3", "name": "nightly-etl"})
    create(client)

    def ids(**filters: str) -> list[str]:
        return [event["tokenId"] for event in creates(client, **filters)]

    assert ids(jobId="app-20261128093000-0001") == [second["tokenId"], first["tokenId"]]  # newest first
    assert ids(jobFramework="spark") == [other["tokenId"], second["tokenId"], first["tokenId"]]
    assert ids(jobFramework="flink") == [flink["tokenId"]]
    assert ids(jobName="nightly-etl") == [flink["tokenId"], other["tokenId"], second["tokenId"], first["tokenId"]]
    assert ids(jobUser="ann") == [other["tokenId"]]
    assert ids(jobFramework="spark", jobUser="joe") == [second["tokenId"], first["tokenId"]]
    assert ids(jobFramework="flink", jobId="app-20261128093000-0001") == []
    assert ids(jobId="app-2026") == []  # exact, not a prefix
    assert ids(jobFramework="SPARK") == []  # exact, case included
    # A job filter finds only events that name a job: renewals of the same token are not in it.
    client.post(f"/v1/tokens/{first['tokenId']}/renew", json={}, headers=basic(ALICE))
    assert {event["action"] for event in events(client, jobId="app-20261128093000-0001")} == {"token.create"}


def test_unicode_and_the_longest_values_are_kept_exactly(client: TestClient) -> None:
    job = {
        "framework": "f" * 32,
        "id": "ジョブ-" + "é" * 252,  # 256 characters, more bytes
        "name": "nächtlicher Lauf 🚀 Ω",
        "user": "josé@EXAMPLE.ORG",
    }
    token = create(client, job=job)
    (event,) = events(client, tokenId=token["tokenId"])
    assert event["job"] == job
    assert [e["tokenId"] for e in creates(client, jobId=job["id"], jobName=job["name"])] == [token["tokenId"]]


def test_a_denied_create_keeps_its_job(client: TestClient) -> None:
    response = client.post("/v1/tokens", json={"owner": "User:bob", "job": SPARK_JOB}, headers=basic(ALICE))
    assert response.status_code == 403
    (event,) = creates(client, jobId=SPARK_JOB["id"])
    assert (event["outcome"], event["principal"], event["owner"], event["job"]) == (
        "denied",
        "User:alice",
        "User:bob",
        SPARK_JOB,
    )


BAD_JOBS = [
    pytest.param({"framework": "spark", "queue": "etl"}, id="unknown-key"),
    pytest.param({"Framework": "spark"}, id="wrong-case-key"),
    pytest.param({"framework": "f" * 33}, id="framework-too-long"),
    pytest.param({"id": "i" * 257}, id="id-too-long"),
    pytest.param({"name": "n" * 257}, id="name-too-long"),
    pytest.param({"user": "é" * 257}, id="user-too-long-in-characters"),
    pytest.param({"id": ""}, id="empty-id"),
    pytest.param({"name": "a\x00b"}, id="nul"),
    pytest.param({"name": "a\nfake line"}, id="newline"),
    pytest.param({"user": "a\x1b[31mred"}, id="escape-sequence"),
    pytest.param({"user": "a\x85b"}, id="c1-control"),
    pytest.param({"name": "evil\u202etxt.exe"}, id="bidi-override"),
    pytest.param({"name": "a\u200bb"}, id="zero-width-space"),
    pytest.param({"name": "a\u2028b"}, id="line-separator"),
    pytest.param({"id": 42}, id="id-a-number"),
    pytest.param({"user": ["joe"]}, id="user-a-list"),
    pytest.param({"framework": None, "id": {"x": 1}}, id="id-an-object"),
    pytest.param("spark", id="job-a-string"),
    pytest.param(["spark"], id="job-a-list"),
]


@pytest.mark.parametrize("job", BAD_JOBS)
def test_a_bad_job_is_refused_and_changes_nothing(client: TestClient, raw_zk: KazooClient, job: object) -> None:
    before = token_state(raw_zk)
    known = {event["id"] for event in events(client)}
    response = client.post("/v1/tokens", json={"job": job}, headers=basic(ALICE))
    assert response.status_code == 422, response.text
    payload = response.json()
    assert payload["error"] == "INVALID_REQUEST"
    assert payload["details"] and payload["details"][0]["loc"][:2] == ["body", "job"]
    assert token_state(raw_zk) == before
    assert [event for event in events(client) if event["id"] not in known and event["action"] == "token.create"] == []


def test_a_lone_surrogate_in_the_raw_body_is_refused(client: TestClient) -> None:
    body = b'{"job": {"name": "a\\ud800b"}}'
    response = client.post("/v1/tokens", content=body, headers=basic(ALICE) | {"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "INVALID_REQUEST"


@pytest.mark.parametrize(
    "filters",
    [
        {"jobFramework": "f" * 33},
        {"jobId": "i" * 257},
        {"jobName": "a\x00b"},
        {"jobUser": "a\nb"},
    ],
)
def test_bad_job_filters_are_refused(client: TestClient, filters: dict[str, str]) -> None:
    response = client.get("/v1/audit", params=filters, headers=basic(ADMIN))
    assert response.status_code == 422
    assert response.json()["error"] == "INVALID_REQUEST"


def test_the_job_filters_need_what_the_trail_needs(client: TestClient) -> None:
    response = client.get("/v1/audit", params={"jobId": SPARK_JOB["id"]}, headers=basic(ALICE))
    assert response.status_code == 403


def run_cli(client: TestClient, *argv: str) -> str:
    args: argparse.Namespace = _parser().parse_args(["audit", *argv])
    # The command's own client, over the test app's transport: the real endpoint answers it.
    kts = KtsClient(str(client.base_url), CommandConfig(credential=UserPassword(*ADMIN)), transport=client._transport)
    return audit_command.act(kts, args)


def test_kts_audit_filters_by_job_and_shows_it(client: TestClient) -> None:
    token = create(client, job=SPARK_JOB)
    create(client, job={**SPARK_JOB, "id": "app-20261128093000-0002"})
    table = run_cli(client, "--job-framework", "spark", "--job-id", SPARK_JOB["id"])
    header, *rows = table.splitlines()
    assert header.split()[-1] == "JOB"
    assert len(rows) == 1 and token["tokenId"] in rows[0]
    assert rows[0].endswith("spark:app-20261128093000-0001 (nightly-etl) by joe")
    found = json.loads(run_cli(client, "--job-name", "nightly-etl", "--job-user", "joe", "--output", "json"))
    assert [event["job"]["id"] for event in found["events"]] == ["app-20261128093000-0002", SPARK_JOB["id"]]
