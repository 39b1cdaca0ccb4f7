"""Describe marks a token past its expiry, not yet swept, with ``"expired": true``, by the service's clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient

from app.api.app import create_app
from app.backends import load_settings
from tests.api.conftest import ALICE, basic, put_user
from tests.clocks import ShiftedClock
from tests.conftest import SECRET


@pytest.fixture
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture
def client(zk_connect: str, raw_zk: KazooClient, tmp_path: Path, clock: ShiftedClock) -> Iterator[TestClient]:
    put_user(raw_zk, *ALICE)
    settings = load_settings(
        zookeeper_connect=zk_connect,
        delegation_token_secret_key=SECRET,
        service_id="test",
        audit_db_url=f"sqlite:///{tmp_path / 'audit.db'}",
        delegation_token_expiry_check_interval_ms=86_400_000,  # no sweep during the test: the marker shows
    )
    with TestClient(create_app(settings, clock=clock), raise_server_exceptions=False) as test_client:
        yield test_client


def test_a_token_past_its_expiry_is_marked_until_swept(client: TestClient, clock: ShiftedClock) -> None:
    created = client.post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    assert created["expired"] is False
    token_id = created["tokenId"]
    listed = client.get("/v1/tokens", headers=basic(ALICE)).json()["tokens"]
    assert [token["expired"] for token in listed if token["tokenId"] == token_id] == [False]
    assert client.get(f"/v1/tokens/{token_id}", headers=basic(ALICE)).json()["expired"] is False

    clock.offset_ms = created["expiryTimestamp"] - clock.now_ms() + 1
    listed = client.get("/v1/tokens", headers=basic(ALICE)).json()["tokens"]
    assert [token["expired"] for token in listed if token["tokenId"] == token_id] == [True]
    assert client.get(f"/v1/tokens/{token_id}", headers=basic(ALICE)).json()["expired"] is True
