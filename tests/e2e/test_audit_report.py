"""The audit report end to end: a real ``kts serve`` with an SQLite audit database takes a known script of
requests over HTTP (own creates, KIP-373 creates by a service, renewals, an expire, a sweep, refusals and a
run of failed logins); ``kts audit-export`` writes the trail as Parquet and ``kts audit-report`` (a real
process on Spark ``local[2]``) turns it into tables and HTML, in which exactly those counts must appear.
Failed logins count attempts: a throttled summary record stands for ``details.attempts`` of them."""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient
from sqlalchemy import func, select

from app.cli import audit_export
from app.storage.audit.database import make_engine
from app.storage.audit.tables import audit_events
from tests.api.conftest import ADMIN, ALICE, BOB, CAROL, basic, bearer, put_user
from tests.api.helpers import eventually
from tests.conftest import SECRET
from tests.e2e.conftest import ROOT, start_kts

NIMBUS = ("nimbus", "nimbus-pw")  # a scheduler that gets tokens for the users whose jobs it runs
# The jobs the scheduler names in its creates, as the JVM plug-ins do (issue 33); lee's create names none.
JOE_JOB = {"framework": "spark", "id": "app-20261128093000-0001", "name": "nightly-etl", "user": "joe"}
KIM_JOB = {"framework": "flink", "id": "4f3c2b1a", "name": "sessionize", "user": "kim"}
IMPERSONATED = ("User:joe", "User:kim", "User:lee")
FAILED_LOGINS = 6  # wrong passwords for User:mallory, all from this test's address
HOUR_MS = 3_600_000


def _acl(owner: str) -> dict[str, str]:
    return {
        "resourceType": "User",
        "resourceName": owner,
        "patternType": "LITERAL",
        "principal": "User:nimbus",
        "host": "*",
        "operation": "CreateTokens",
        "permissionType": "Allow",
    }


def _wrong_password(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:not-the-password".encode()).decode()}


def _create(url: str, caller: tuple[str, str], **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{url}/v1/tokens", json=body, headers=basic(caller))
    assert response.status_code == 201, response.text
    return dict(response.json())


def _refused(response: httpx.Response, code: int) -> None:
    assert (response.status_code, response.json().get("code")) == (403, code), response.text


def _within_one_clock_hour() -> None:
    """The failed logins must fall in one clock hour to be one burst: start them clear of an hour's end."""
    into_hour = time.time() * 1000 % HOUR_MS
    if into_hour > HOUR_MS - 20_000:
        time.sleep((HOUR_MS - into_hour) / 1000 + 1)


def perform_script(url: str) -> dict[str, Any]:
    """The known actions; returns the tokens the assertions name."""
    for owner in IMPERSONATED:
        assert httpx.post(f"{url}/v1/acls", json=_acl(owner), headers=basic(ADMIN)).status_code == 201

    alice_kept = _create(url, ALICE)
    alice_dropped = _create(url, ALICE)
    bob_short = _create(url, BOB, maxLifetimeMs=HOUR_MS)
    carol_doomed = _create(url, CAROL, maxLifetimeMs=1_000)  # expires in a second; the sweeper removes it
    joe_job = _create(url, NIMBUS, owner="User:joe", renewers=["User:nimbus"], job=JOE_JOB)
    _create(url, NIMBUS, owner="User:joe", renewers=["User:nimbus"], job=JOE_JOB)
    _create(url, NIMBUS, owner="User:kim", renewers=["User:nimbus"], job=KIM_JOB)
    _create(url, NIMBUS, owner="User:lee", renewers=["User:nimbus"])

    for _ in range(2):  # the scheduler keeps its job's token alive, as a renewer
        renewed = httpx.post(f"{url}/v1/tokens/{joe_job['tokenId']}/renew", json={}, headers=basic(NIMBUS))
        assert renewed.status_code == 200, renewed.text
    assert (
        httpx.post(f"{url}/v1/tokens/renew", json={"hmac": alice_kept["hmac"]}, headers=basic(ALICE)).status_code == 200
    )
    expired = httpx.post(
        f"{url}/v1/tokens/{alice_dropped['tokenId']}/expire", json={"expiryTimePeriodMs": -1}, headers=basic(ALICE)
    )
    assert expired.status_code == 200, expired.text

    _refused(httpx.post(f"{url}/v1/tokens", json={"owner": "User:joe"}, headers=basic(BOB)), 65)  # no ACL
    _refused(httpx.post(f"{url}/v1/tokens", json={"owner": "User:kim"}, headers=basic(CAROL)), 65)
    _refused(httpx.post(f"{url}/v1/tokens", json={}, headers=bearer(alice_kept)), 64)  # token-authenticated
    _refused(httpx.post(f"{url}/v1/tokens/renew", json={"hmac": alice_kept["hmac"]}, headers=basic(BOB)), 63)

    _within_one_clock_hour()
    for _ in range(FAILED_LOGINS):
        assert httpx.get(f"{url}/v1/tokens", headers=_wrong_password("mallory")).status_code == 401
    bogus = {"tokenId": "AAAAAAAAAAAAAAAAAAAAAA", "hmac": base64.b64encode(b"x" * 32).decode()}
    assert httpx.get(f"{url}/v1/tokens", headers=bearer(bogus)).status_code == 401

    # The brute-force throttle (app/domain/throttle.py) records the first failure of a burst in full and the
    # rest as {"throttled": true, "attempts": n} once the burst has been quiet for a window (a short one
    # here), noticed at the next login: the admin's reads of the trail below.
    def every_failed_login_recorded() -> bool:
        events = httpx.get(f"{url}/v1/audit", params={"action": "authentication"}, headers=basic(ADMIN))
        return sum(event["details"].get("attempts", 1) for event in events.json()["events"]) == FAILED_LOGINS + 1

    eventually(every_failed_login_recorded, timeout_s=20)

    def swept() -> bool:
        events = httpx.get(f"{url}/v1/audit", params={"action": "token.sweep"}, headers=basic(ADMIN)).json()["events"]
        return [event["tokenId"] for event in events] == [carol_doomed["tokenId"]]

    eventually(swept, timeout_s=20)
    return {"alice_dropped": alice_dropped, "carol_doomed": carol_doomed, "bob_short": bob_short, "joe_job": joe_job}


def table(out: Path, name: str) -> list[dict[str, Any]]:
    return list(pq.read_table(out / name).to_pylist())


def summary_values(page: str) -> dict[str, int]:
    return {key: int(value) for key, value in re.findall(r'<dd id="summary-([a-z_]+)">(\d+)</dd>', page)}


@pytest.mark.timeout(600)
def test_report_counts_exactly_what_was_done(
    tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]
) -> None:
    for user in (ADMIN, ALICE, BOB, CAROL, NIMBUS):
        put_user(raw_zk, *user)
    audit_db = f"sqlite:///{tmp_path / 'audit.db'}"
    url = start_kts(
        processes,
        tmp_path,
        "kts-audited",
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SUPER_USERS="User:admin",
        KTS_AUDIT_DB_URL=audit_db,
        KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS="300",
        KTS_AUTH_FAILURES_WINDOW_MS="1500",
    )
    tokens = perform_script(url)
    (service,) = processes  # stopped, so that nothing is in flight while the trail is exported
    service.terminate()
    assert service.wait(30) == 0

    exported = tmp_path / "exported"
    parser = argparse.ArgumentParser(prog="kts")
    audit_export.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["audit-export", "--db", audit_db, "--out", str(exported), "--settle-seconds", "0"])
    assert args.handler(args) == 0
    engine = make_engine(audit_db)
    with engine.connect() as connection:
        in_database = connection.execute(select(func.count()).select_from(audit_events)).scalar_one()
    engine.dispose()
    trail = ds.dataset(exported, format="parquet", partitioning="hive").to_table()
    assert trail.num_rows == in_database
    failed_logins: Counter[str | None] = Counter()
    for row in trail.filter(pc.equal(trail["action"], "authentication")).to_pylist():
        assert (row["outcome"], row["client_address"]) == ("denied", "127.0.0.1")
        failed_logins[row["principal"]] += json.loads(row["details"]).get("attempts", 1)
    # Wrong passwords are charged to the address (the lockout counts the account): the burst's first failure
    # names mallory, its summary ({"throttled": true, "attempts": n}) the address alone, with the bogus token's.
    assert failed_logins == {"User:mallory": 1, None: FAILED_LOGINS}

    report_dir = tmp_path / "report"
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli.audit_report",
            "--input",
            str(exported),
            "--out",
            str(report_dir),
            "--master",
            "local[2]",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert report.returncode == 0, report.stderr[-3000:]

    expected_summary = {
        "events": in_database,
        "tokens_issued": 8,
        "impersonated_tokens": 4,
        "impersonation_refused": 2,
        "renewals": 3,
        "refusals": 4,
        "authentication_failures": FAILED_LOGINS + 1,
        "burst_hours": 0,  # minutes of trail: too short a baseline to judge an hour
        "swept_tokens": 1,
        "expired_tokens": 1,
        "lingering_tokens": 0,
        "jobs": 2,
        "tokens_with_job": 3,
    }
    for key, value in expected_summary.items():
        assert f"{key}: {value}" in report.stdout.splitlines()
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    assert summary_values(page) == expected_summary
    assert "data:image/png;base64," in page and 'src="http' not in page
    for name in ("User:nimbus", "User:joe", "User:mallory"):
        assert name in page

    by_owner: Counter[str] = Counter()
    for row in table(report_dir, "tokens_issued_by_owner_daily"):
        by_owner[row["owner"]] += row["tokens"]
    assert by_owner == {"User:alice": 2, "User:bob": 1, "User:carol": 1, "User:joe": 2, "User:kim": 1, "User:lee": 1}
    by_requester: Counter[str] = Counter()
    for row in table(report_dir, "tokens_issued_by_requester_daily"):
        by_requester[row["token_requester"]] += row["tokens"]
    assert by_requester == {"User:alice": 2, "User:bob": 1, "User:carol": 1, "User:nimbus": 4}

    matrix = {
        (row["token_requester"], row["owner"]): (row["tokens"], row["refused"])
        for row in table(report_dir, "impersonation_matrix")
    }
    assert matrix == {
        ("User:nimbus", "User:joe"): (2, 0),
        ("User:nimbus", "User:kim"): (1, 0),
        ("User:nimbus", "User:lee"): (1, 0),
        ("User:bob", "User:joe"): (0, 1),
        ("User:carol", "User:kim"): (0, 1),
    }

    lifetimes = {(row["kind"], row["bucket"]): row["tokens"] for row in table(report_dir, "lifetime_distribution")}
    assert lifetimes == {
        ("requested", "server default"): 6,
        ("requested", "1 h - 6 h"): 1,
        ("requested", "< 1 h"): 1,
        ("granted", "7 d - 30 d"): 6,
        ("granted", "1 h - 6 h"): 1,
        ("granted", "< 1 h"): 1,
    }
    renewals = {row["token_id"]: row["renewals"] for row in table(report_dir, "token_renewals")}
    assert len(renewals) == 8 and renewals[tokens["joe_job"]["tokenId"]] == 2
    assert {row["renewals"]: row["tokens"] for row in table(report_dir, "renew_count_distribution")} == {
        0: 6,
        1: 1,
        2: 1,
    }

    compliance = {row["token_id"]: row["status"] for row in table(report_dir, "expiry_compliance")}
    assert compliance == {tokens["carol_doomed"]["tokenId"]: "swept", tokens["alice_dropped"]["tokenId"]: "expired"}

    refusals = {
        (row["kind"], row["action"], row["error_code"]): row["denials"]
        for row in table(report_dir, "refusals_by_action")
    }
    assert refusals == {
        ("refusal", "token.create", 65): 2,
        ("refusal", "token.create", 64): 1,
        ("refusal", "token.renew", 63): 1,
        ("authentication", "authentication", None): FAILED_LOGINS + 1,
    }
    denials = {
        (row["kind"], row["principal"], row["client_address"]): row["denials"]
        for row in table(report_dir, "denials_by_principal")
    }
    assert denials == {
        ("authentication", "User:mallory", "127.0.0.1"): 1,  # the rest of the burst is the address's (above)
        ("authentication", None, "127.0.0.1"): FAILED_LOGINS,
        ("refusal", "User:bob", "127.0.0.1"): 2,
        ("refusal", "User:carol", "127.0.0.1"): 1,
        ("refusal", "User:alice", "127.0.0.1"): 1,
    }
    hours = {
        row["principal"]: (row["denials"], row["threshold"], row["is_burst"])
        for row in table(report_dir, "denial_bursts")
    }
    assert hours["User:mallory"] == (1, None, False)

    by_job = {
        (row["job_framework"], row["job_id"], row["job_name"], row["job_user"]): row["tokens"]
        for row in table(report_dir, "tokens_by_job")
    }
    assert by_job == {tuple(JOE_JOB.values()): 2, tuple(KIM_JOB.values()): 1}
    assert "<td>app-20261128093000-0001</td><td>nightly-etl</td><td>joe</td>" in page

    top_owners = [
        (row["rank"], row["owner"], row["tokens"], row["renewals"]) for row in table(report_dir, "top_owners")
    ]
    assert sorted(top_owners) == [
        (1, "User:joe", 2, 2),
        (2, "User:alice", 2, 1),
        (3, "User:bob", 1, 0),
        (4, "User:carol", 1, 0),
        (5, "User:kim", 1, 0),
        (6, "User:lee", 1, 0),
    ]
    top_requesters = [
        (row["rank"], row["token_requester"], row["tokens"], row["for_others"], row["owners"], row["refused"])
        for row in table(report_dir, "top_requesters")
    ]
    assert sorted(top_requesters) == [
        (1, "User:nimbus", 4, 4, 3, 0),
        (2, "User:alice", 2, 0, 1, 1),
        (3, "User:bob", 1, 0, 1, 1),
        (4, "User:carol", 1, 0, 1, 1),
    ]
