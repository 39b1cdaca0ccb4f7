"""The per-account lockout over HTTP on a real ZooKeeper, one replica (two real replicas and many loopback
addresses: tests/e2e/test_lockout.py): a locked account is refused from every address, the right password too,
before any password hashing; only super users unlock; a lock ends by itself after its duration and its
release is audited once; refused attempts leave a bounded number of audit rows; threshold 0 turns it off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from app.storage.zk.znodes import KtsZNodes
from tests.api.conftest import ADMIN, ALICE, BOB, basic
from tests.api.test_brute_force import (  # noqa: F401 - fixtures
    WRONG_ALICE,
    Service,
    checks,
    make_service,
)

THRESHOLD = 4
DURATION_MS = 600_000


def _service(make_service: Callable[..., Service], **overrides: Any) -> Service:  # noqa: F811
    return make_service(
        auth_lockout_threshold=THRESHOLD, auth_lockout_duration_ms=DURATION_MS, auth_failures_max=10, **overrides
    )


def _lock_alice(service: Service) -> None:
    for n in range(THRESHOLD):
        assert service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401


def _assert_locked(response: Any) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["error"] == "ACCOUNT_LOCKED"
    assert 1 <= int(response.headers["Retry-After"]) <= DURATION_MS // 1000


def test_a_locked_account_is_refused_everywhere_before_any_check(
    make_service: Callable[..., Service],  # noqa: F811
    checks: dict[str, int],  # noqa: F811
    raw_zk: KazooClient,
) -> None:
    service = _service(make_service)
    _lock_alice(service)
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1  # published once, on the crossing
    checks.update(zookeeper=0, pbkdf2=0)
    for n in range(20):
        _assert_locked(service.from_(f"198.51.100.{n + 1}").get("/v1/tokens", headers=basic(ALICE)))
    assert checks == {"zookeeper": 0, "pbkdf2": 0}, "a locked account's attempt reached the credential check"
    assert service.from_("198.51.100.99").get("/v1/tokens", headers=basic(BOB)).status_code == 200
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1  # refusals write nothing to ZooKeeper

    locks = service.audit("account.lock")
    assert [(e["principal"], e["details"]["failures"], e["details"]["threshold"]) for e in locks] == [
        ("User:alice", THRESHOLD, THRESHOLD)
    ]
    refused = [e for e in service.audit("authentication") if e["details"].get("locked")]
    assert len(refused) == 20  # each from a new address: each opens its own burst
    assert all(ALICE[1] not in str(event) for event in service.audit("authentication"))


def test_only_super_users_unlock(make_service: Callable[..., Service], raw_zk: KazooClient) -> None:  # noqa: F811
    service = _service(make_service)
    _lock_alice(service)
    home = service.from_("203.0.113.5")
    refused = home.delete("/v1/users/alice/lockout", headers=basic(BOB))
    assert refused.status_code == 403
    assert refused.json()["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    _assert_locked(home.get("/v1/tokens", headers=basic(ALICE)))

    unlocked = home.delete("/v1/users/alice/lockout", headers=basic(ADMIN))
    assert unlocked.json() == {"user": "alice", "wasLocked": True}
    assert raw_zk.get_children(KtsZNodes.LOCKOUTS) == []
    assert home.get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    again = home.delete("/v1/users/alice/lockout", headers=basic(ADMIN))
    assert again.json() == {"user": "alice", "wasLocked": False}
    events = [(e["principal"], e["outcome"], e["details"].get("wasLocked")) for e in service.audit("account.unlock")]
    assert events == [
        ("User:bob", "denied", None),
        ("User:admin", "succeeded", True),
        ("User:admin", "succeeded", False),
    ]


def test_a_lock_ends_after_its_duration_and_its_release_is_audited_once(
    make_service: Callable[..., Service],  # noqa: F811
    raw_zk: KazooClient,
) -> None:
    service = _service(make_service)
    _lock_alice(service)
    _assert_locked(service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ALICE)))
    service.clock.offset_ms += DURATION_MS
    assert service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    assert service.from_("203.0.113.6").get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    assert raw_zk.get_children(KtsZNodes.LOCKOUTS) == []
    releases = service.audit("account.unlock")
    assert [(e["owner"], e["details"]["reason"]) for e in releases] == [("User:alice", "expired")]


def test_unknown_names_are_locked_the_same_way(make_service: Callable[..., Service]) -> None:  # noqa: F811
    service = _service(make_service)
    for n in range(THRESHOLD):
        service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(("nobody\x00", "guess")))
    _assert_locked(service.from_("203.0.113.5").get("/v1/tokens", headers=basic(("nobody\x00", "guess"))))


def test_threshold_zero_turns_it_off(make_service: Callable[..., Service], raw_zk: KazooClient) -> None:  # noqa: F811
    service = make_service(auth_lockout_threshold=0, auth_failures_max=0)
    for n in range(30):
        assert service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    assert service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    assert raw_zk.get_children(KtsZNodes.LOCKOUTS) == []
