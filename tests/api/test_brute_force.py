"""Brute-force defence over HTTP on a real ZooKeeper: repeated failures slow down to 429 with Retry-After,
before any password hashing or ZooKeeper read; the user from a clean address still gets in; a burst
leaves a bounded number of audit rows; after the window everything works again.

The TestClient's client address is fixed, and kts rightly ignores X-Forwarded-For, so the app is wrapped
in a small ASGI layer that sets ``scope["client"]`` to the address the test chooses. Time is the system
clock plus an offset the test moves forward: no sleeping.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from kazoo.client import KazooClient
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.app import create_app
from app.auth import basic as basic_module
from app.backends import load_settings
from app.storage.zk.user_store import ZkUserStore
from tests.api.conftest import ADMIN, ALICE, BOB, basic, bearer, put_user
from tests.clocks import ShiftedClock
from tests.conftest import SECRET
from tests.postgres_server import PostgresServer

ATTACKER = "192.0.2.66"
HOME = "198.51.100.7"
WINDOW_MS = 60_000
MAX_FAILURES = 5
WRONG_ALICE = (ALICE[0], "not-her-password")


class FromAddress:
    """Every request seems to come from ``address``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.address = HOME

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "client": (self.address, 40_000)}
        await self.app(scope, receive, send)


class Service:
    def __init__(self, client: TestClient, wrapper: FromAddress, clock: ShiftedClock) -> None:
        self.client = client
        self.wrapper = wrapper
        self.clock = clock

    def from_(self, address: str) -> TestClient:
        self.wrapper.address = address
        return self.client

    def audit(self, action: str) -> list[dict[str, Any]]:
        """Events of ``action``, oldest first (asked from HOME as the super user)."""
        response = self.from_(HOME).get(f"/v1/audit?action={action}&limit=1000", headers=basic(ADMIN))
        assert response.status_code == 200
        return list(reversed(response.json()["events"]))


@pytest.fixture
def make_service(zk_connect: str, raw_zk: KazooClient, tmp_path: Path) -> Iterator[Callable[..., Service]]:
    for name, password in (ADMIN, ALICE, BOB):
        put_user(raw_zk, name, password)
    clients: list[TestClient] = []

    def make(**overrides: Any) -> Service:
        values: dict[str, Any] = {
            "zookeeper_connect": zk_connect,
            "delegation_token_secret_key": SECRET,
            "super_users": "User:admin",
            "service_id": "test",
            "audit_db_url": f"sqlite:///{tmp_path / f'audit-{len(clients)}.db'}",
            "auth_failures_max": MAX_FAILURES,
            "auth_failures_window_ms": WINDOW_MS,
            # the throttle's own per-principal rules: with the lockout on, user names are its to count
            # (tests/api/test_lockout.py)
            "auth_lockout_threshold": 0,
        }
        settings = load_settings(**(values | overrides))
        clock = ShiftedClock()
        wrapper = FromAddress(create_app(settings, clock=clock))
        client = TestClient(wrapper, raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return Service(client, wrapper, clock)

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts (without replacing them) the ZooKeeper reads of credentials and the PBKDF2 runs."""
    counts = {"zookeeper": 0, "pbkdf2": 0}
    read, hash_ = ZkUserStore.credentials, basic_module.password_matches

    def counted_read(self: ZkUserStore, user_name: str) -> Any:
        counts["zookeeper"] += 1
        return read(self, user_name)

    def counted_hash(*args: Any) -> bool:
        counts["pbkdf2"] += 1
        return hash_(*args)

    monkeypatch.setattr(ZkUserStore, "credentials", counted_read)
    monkeypatch.setattr(basic_module, "password_matches", counted_hash)
    return counts


def _assert_throttled(response: Any) -> int:
    assert response.status_code == 429, response.text
    assert response.json()["error"] == "TOO_MANY_ATTEMPTS"
    retry_after = response.headers["Retry-After"]
    assert retry_after.isdigit() and int(retry_after) >= 1
    return int(retry_after)


def test_wrong_passwords_slow_down_to_429_and_the_user_elsewhere_still_gets_in(
    service: Service, checks: dict[str, int]
) -> None:
    attacker = service.from_(ATTACKER)
    for _ in range(MAX_FAILURES):
        assert attacker.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    checks.update(zookeeper=0, pbkdf2=0)
    retry_after = _assert_throttled(attacker.get("/v1/tokens", headers=basic(WRONG_ALICE)))
    assert retry_after == WINDOW_MS // MAX_FAILURES // 1000
    _assert_throttled(attacker.get("/v1/tokens", headers=basic(ALICE)))  # even the right password: no oracle
    assert checks == {"zookeeper": 0, "pbkdf2": 0}, "a throttled attempt reached the credential check"

    assert service.from_(HOME).get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    assert service.from_(ATTACKER).get("/v1/tokens", headers=basic(BOB)).status_code == 200  # another user


def test_many_addresses_guessing_one_password_never_lock_out_a_clean_address(service: Service) -> None:
    bots = [f"192.0.2.{n}" for n in range(1, MAX_FAILURES + 2)]
    for bot in bots:
        assert service.from_(bot).get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    _assert_throttled(service.from_(bots[0]).get("/v1/tokens", headers=basic(WRONG_ALICE)))
    assert service.from_(HOME).get("/v1/tokens", headers=basic(ALICE)).status_code == 200


def test_a_success_resets_the_pair(service: Service) -> None:
    client = service.from_(HOME)
    for _ in range(3):
        for _ in range(MAX_FAILURES - 1):
            assert client.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
        assert client.get("/v1/tokens", headers=basic(ALICE)).status_code == 200


def test_a_burst_leaves_a_bounded_number_of_audit_rows(service: Service) -> None:
    attacker = service.from_(ATTACKER)
    statuses = [attacker.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code for _ in range(60)]
    assert statuses == [401] * MAX_FAILURES + [429] * (60 - MAX_FAILURES)
    rows = [event for event in service.audit("authentication") if event["clientAddress"] == ATTACKER]
    assert len(rows) == 1
    first = rows[0]
    assert (first["outcome"], first["principal"], first["details"]["scheme"]) == ("denied", "User:alice", "basic")
    assert "throttled" not in first["details"]

    service.clock.offset_ms += WINDOW_MS  # the burst has ended: noticed at the next request, whoever sends it
    rows = [event for event in service.audit("authentication") if event["clientAddress"] == ATTACKER]
    assert len(rows) == 2
    summary = rows[1]
    assert (summary["outcome"], summary["principal"]) == ("denied", "User:alice")
    assert summary["details"]["throttled"] is True
    assert summary["details"]["attempts"] == 59
    assert summary["details"]["refused"] == 60 - MAX_FAILURES
    assert all(WRONG_ALICE[1] not in str(row) for row in rows)


def test_after_the_window_it_works_again(service: Service) -> None:
    attacker = service.from_(ATTACKER)
    for _ in range(MAX_FAILURES):
        attacker.get("/v1/tokens", headers=basic(WRONG_ALICE))
    _assert_throttled(attacker.get("/v1/tokens", headers=basic(ALICE)))
    service.clock.offset_ms += WINDOW_MS
    assert attacker.get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    assert attacker.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401


def test_an_address_guessing_many_names_is_refused_whatever_it_claims(make_service: Callable[..., Service]) -> None:
    service = make_service(auth_failures_address_max=8)
    attacker = service.from_(ATTACKER)
    for n in range(8):
        assert attacker.get("/v1/tokens", headers=basic((f"user{n}", "guess"))).status_code == 401
    _assert_throttled(attacker.get("/v1/tokens", headers=basic(("someone-else", "guess"))))
    _assert_throttled(attacker.get("/v1/tokens"))
    assert service.from_(HOME).get("/v1/tokens", headers=basic(BOB)).status_code == 200


def test_wrong_bearer_hmacs_are_throttled_per_token(service: Service) -> None:
    token = service.from_(HOME).post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    forged = {"tokenId": token["tokenId"], "hmac": base64.b64encode(b"\x00" * 64).decode()}
    attacker = service.from_(ATTACKER)
    for _ in range(MAX_FAILURES):
        assert attacker.get("/v1/tokens", headers=bearer(forged)).status_code == 401
    _assert_throttled(attacker.get("/v1/tokens", headers=bearer(token)))
    assert service.from_(HOME).get("/v1/tokens", headers=bearer(token)).status_code == 200
    rows = [event for event in service.audit("authentication") if event["clientAddress"] == ATTACKER]
    assert [(row["tokenId"], row["details"]["scheme"]) for row in rows] == [(token["tokenId"], "bearer")]


def test_failed_verifies_throttle_too(service: Service) -> None:
    token = service.from_(HOME).post("/v1/tokens", json={}, headers=basic(ALICE)).json()
    forged = {"tokenId": token["tokenId"], "hmac": base64.b64encode(b"\x01" * 64).decode()}
    attacker = service.from_(ATTACKER)
    for _ in range(MAX_FAILURES):
        assert attacker.post("/v1/tokens/verify", json=forged, headers=basic(BOB)).status_code == 401
    right = {"tokenId": token["tokenId"], "hmac": token["hmac"]}
    for _ in range(20):
        _assert_throttled(attacker.post("/v1/tokens/verify", json=right, headers=basic(BOB)))
    assert attacker.get("/v1/tokens", headers=basic(BOB)).status_code == 200  # logins are a separate budget
    assert service.from_(HOME).post("/v1/tokens/verify", json=right, headers=basic(BOB)).status_code == 200

    rows = [event for event in service.audit("token.verify") if event["clientAddress"] == ATTACKER]
    assert [(row["principal"], row["tokenId"]) for row in rows] == [("User:bob", token["tokenId"])]
    service.clock.offset_ms += WINDOW_MS
    assert attacker.post("/v1/tokens/verify", json=right, headers=basic(BOB)).status_code == 200
    rows = [event for event in service.audit("token.verify") if event["clientAddress"] == ATTACKER]
    assert len(rows) == 2
    assert (rows[1]["tokenId"], rows[1]["details"]["attempts"], rows[1]["details"]["refused"]) == (
        token["tokenId"],
        MAX_FAILURES - 1 + 20,
        20,
    )


def test_the_defence_can_be_turned_off(make_service: Callable[..., Service]) -> None:
    service = make_service(auth_failures_max=0)
    attacker = service.from_(ATTACKER)
    assert {attacker.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code for _ in range(30)} == {401}
    assert len([e for e in service.audit("authentication") if e["clientAddress"] == ATTACKER]) == 30


def test_429_is_documented_wherever_401_is(service: Service) -> None:
    document = service.from_(HOME).get("/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            if "401" in codes:
                assert "429" in codes, f"{method} {path}"
                assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_a_burst_still_open_at_shutdown_is_audited(service: Service, tmp_path: Path) -> None:
    attacker = service.from_(ATTACKER)
    for _ in range(MAX_FAILURES + 3):
        attacker.get("/v1/tokens", headers=basic(WRONG_ALICE))
    service.client.__exit__(None, None, None)  # the app stops while the burst is still open
    service.client.__enter__()  # started again on the same audit database

    rows = [event for event in service.audit("authentication") if event["clientAddress"] == ATTACKER]
    assert [row["details"].get("throttled", False) for row in rows] == [False, True]
    assert rows[1]["details"]["attempts"] == MAX_FAILURES + 2


def test_a_nul_byte_in_a_user_name_is_refused_and_audited_escaped_on_postgresql(
    make_service: Callable[..., Service], postgres: PostgresServer
) -> None:
    """PostgreSQL refuses NUL in text: the refused login and its burst summary are still audited (the name
    escaped), never a 500, and the next legitimate request, from the attacker's address too, succeeds."""
    service = make_service(audit_db_url=postgres.create_database())
    attacker = service.from_(ATTACKER)
    odd = ("ali\x00ce\x1b[2J", "guess")
    statuses = [attacker.get("/v1/tokens", headers=basic(odd)).status_code for _ in range(MAX_FAILURES + 2)]
    assert statuses == [401] * MAX_FAILURES + [429] * 2
    assert service.from_(HOME).get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    escaped = "User:ali\\x00ce\\x1b[2J"
    rows = [event for event in service.audit("authentication") if event["clientAddress"] == ATTACKER]
    # No such user: its failures join the address's burst of unknown names; its refusals a burst of their own.
    assert [(row["outcome"], row["principal"], row["details"].get("throttled")) for row in rows] == [
        ("denied", escaped, None),
        ("denied", escaped, True),
    ]

    service.clock.offset_ms += WINDOW_MS  # the burst summaries are written during the next, unrelated request
    assert service.from_(HOME).post("/v1/tokens", json={}, headers=basic(ALICE)).status_code == 201
    rows = [event for event in service.audit("authentication") if event["clientAddress"] == ATTACKER]
    assert len(rows) == 4
    summaries = {row["principal"]: row["details"] for row in rows[2:]}
    assert summaries[None]["unknownNames"] is True
    assert summaries[None]["attempts"] == MAX_FAILURES - 1
    assert summaries[None]["sampleNames"] == [escaped] * (MAX_FAILURES - 1)
    assert summaries[escaped]["throttled"] is True
    assert summaries[escaped]["refused"] == 1
    assert service.from_(ATTACKER).get("/v1/tokens", headers=basic(ALICE)).status_code == 200
