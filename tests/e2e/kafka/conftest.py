"""kts beside a real Kafka broker: ``kts serve`` on the broker's ZooKeeper chroot with the broker's secret."""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.cli.server.kafka_broker.broker import User
from tests.e2e.conftest import start_kts
from tests.kafka.brokers import RunningBroker


@dataclass
class Kts:
    """One ``kts serve`` replica and the calls the tests make to it, each as a given user (Basic)."""

    url: str
    log_path: Path

    def request(self, method: str, path: str, user: User, **options: Any) -> httpx.Response:
        return httpx.request(method, f"{self.url}{path}", auth=(user.name, user.password), timeout=30, **options)

    def create_token(self, user: User, **body: Any) -> dict[str, Any]:
        response = self.request("POST", "/v1/tokens", user, json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def grant(self, user: User, resource_type: str, resource_name: str, principal: str, operation: str) -> None:
        acl = {
            "resourceType": resource_type,
            "resourceName": resource_name,
            "patternType": "LITERAL",
            "principal": principal,
            "host": "*",
            "operation": operation,
            "permissionType": "Allow",
        }
        response = self.request("POST", "/v1/acls", user, json=acl)
        assert response.status_code in (200, 201), response.text


def start_kts_beside(
    processes: list[subprocess.Popen[str]], directory: Path, zookeeper_connect: str, secret: str, **settings: str
) -> Kts:
    name = f"kts-{uuid.uuid4().hex[:6]}"
    url = start_kts(
        processes,
        directory,
        name,
        KTS_ZOOKEEPER_CONNECT=zookeeper_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=secret,
        KTS_SUPER_USERS="User:admin",
        KTS_AUTH_FAILURES_MAX="0",  # tests poll with logins that fail until a broker's write arrives
        **settings,
    )
    return Kts(url, directory / f"{name}.log")


def stop_all(processes: list[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module")
def kts(kafka_zk_broker: RunningBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kts]:
    """kts on the ZooKeeper-mode broker's chroot and secret, its sweeper every second (as the broker's)."""
    assert kafka_zk_broker.zookeeper_connect is not None
    processes: list[subprocess.Popen[str]] = []
    try:
        yield start_kts_beside(
            processes,
            tmp_path_factory.mktemp("kts-beside-kafka"),
            kafka_zk_broker.zookeeper_connect,
            kafka_zk_broker.secret,
            KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS="1000",
        )
    finally:
        stop_all(processes)


_TOKEN_ID = re.compile(r"[A-Za-z0-9_-]{22}")
_HMAC = re.compile(r"[A-Za-z0-9+/]{86}==")


@dataclass(frozen=True)
class DescribedToken:
    """A row of kafka-delegation-tokens.sh --describe."""

    token_id: str
    hmac: str
    owner: str
    requester: str
    renewers: str
    issue_date: str
    expiry_date: str
    max_date: str


def described_tokens(output: str) -> list[DescribedToken]:
    """The rows of DelegationTokenCommand's table (``TOKENID HMAC OWNER REQUESTER RENEWERS ISSUEDATE EXPIRYDATE
    MAXDATE``); the renewers are a bracketed list that may hold spaces."""
    rows = []
    for line in output.splitlines():
        words = line.split()
        if len(words) < 8 or not _TOKEN_ID.fullmatch(words[0]) or not _HMAC.fullmatch(words[1]):
            continue
        start, end = line.index("["), line.index("]") + 1
        before, after = line[:start].split(), line[end:].split()
        rows.append(DescribedToken(*before[:4], line[start:end], *after[:3]))
    return rows


def tool_date(timestamp_ms: int) -> str:
    """How kafka-delegation-tokens.sh prints a time (``yyyy-MM-dd'T'HH:mm``; the tools run in UTC)."""
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M")


def created_token(output: str) -> DescribedToken:
    (row,) = described_tokens(output)
    return row
