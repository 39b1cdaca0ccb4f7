"""The per-account lockout over HTTP on a real ZooKeeper, one replica (two real replicas and many loopback
addresses: tests/e2e/test_lockout.py): a locked account is refused from every address, the right password too,
before any password hashing, loopback included; an exempt address exempts super users alone, and throttles
their guesses per (account, address); only super users unlock; a lock ends by itself after its duration and the
leader deletes it; refused attempts leave a bounded number of audit rows, and failures naming no known user one
row per address and window; a password the verified-password cache knows lets no guess go uncounted, and one
changed is checked and counted at once; threshold 0 turns it off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient

from app.storage.zk.znodes import KtsZNodes
from tests.api.conftest import ADMIN, ALICE, BOB, basic
from tests.api.helpers import eventually
from tests.api.test_brute_force import (  # noqa: F401 - fixtures
    WRONG_ALICE,
    Service,
    checks,
    make_service,
)

THRESHOLD = 4
DURATION_MS = 600_000
MAX_FAILURES = 10  # auth.failures.max: the throttle's per-(account, address) limit


def _service(make_service: Callable[..., Service], **overrides: Any) -> Service:  # noqa: F811
    values: dict[str, Any] = {
        "auth_lockout_threshold": THRESHOLD,
        "auth_lockout_duration_ms": DURATION_MS,
        "auth_failures_max": MAX_FAILURES,
    }
    return make_service(**(values | overrides))


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
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1  # shared once, on the crossing
    checks.update(zookeeper=0, pbkdf2=0)
    for n in range(20):
        _assert_locked(service.from_(f"198.51.100.{n + 1}").get("/v1/tokens", headers=basic(ALICE)))
    assert checks == {"zookeeper": 0, "pbkdf2": 0}, "a locked account's attempt reached the credential check"
    assert service.from_("198.51.100.99").get("/v1/tokens", headers=basic(BOB)).status_code == 200
    assert len(raw_zk.get_children(KtsZNodes.LOCKOUTS)) == 1  # refusals write nothing to ZooKeeper

    locks = service.audit("account.lock")
    assert [(e["principal"], e["details"]["failures"], e["details"]["shared"]) for e in locks] == [
        ("User:alice", THRESHOLD, True)
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
    assert unlocked.json() == {"user": "alice", "wasLocked": True, "notShared": False, "everyReplica": True}
    assert _locks(raw_zk) == []
    assert home.get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    again = home.delete("/v1/users/alice/lockout", headers=basic(ADMIN))
    assert again.json() == {"user": "alice", "wasLocked": False, "notShared": False, "everyReplica": True}
    events = [(e["principal"], e["outcome"], e["details"].get("wasLocked")) for e in service.audit("account.unlock")]
    assert events == [
        ("User:bob", "denied", None),
        ("User:admin", "succeeded", True),
        ("User:admin", "succeeded", False),
    ]


def test_a_lock_ends_after_its_duration_and_the_leader_deletes_it(
    make_service: Callable[..., Service],  # noqa: F811
    raw_zk: KazooClient,
) -> None:
    service = _service(make_service, auth_lockout_duration_ms=1_500, auth_lockout_cleanup_interval_ms=100)
    _lock_alice(service)
    locked = service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ALICE))
    assert locked.status_code == 429 and locked.json()["error"] == "ACCOUNT_LOCKED"
    eventually(lambda: _locks(raw_zk) == [], timeout_s=30)  # ended by ZooKeeper's clock, deleted by the leader
    assert service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    releases = service.audit("account.unlock")
    assert [(e["owner"], e["details"]) for e in releases] == [(None, {"reason": "expired", "locks": 1})]


def test_wrong_passwords_from_loopback_lock_the_account_as_from_anywhere(
    make_service: Callable[..., Service],  # noqa: F811
    checks: dict[str, int],  # noqa: F811
) -> None:
    """Once: with the defaults, 40 wrong passwords for bob from 127.0.0.1 were 40 x 401 and locked nothing, and a
    locked account's right password got in from there. Loopback is no longer exempt: a same-host proxy, a mesh
    sidecar or kubectl port-forward would have turned the lockout off for every client behind it."""
    service = _service(make_service)
    loopback = service.from_("127.0.0.1")
    answers = [loopback.get("/v1/tokens", headers=basic((BOB[0], f"guess-{n}"))).status_code for n in range(40)]
    assert answers == [401] * THRESHOLD + [429] * (40 - THRESHOLD)
    assert checks["pbkdf2"] == THRESHOLD * _hashes_per_check(service, checks)  # guesses checked, of 40
    assert [e["principal"] for e in service.audit("account.lock")] == ["User:bob"]
    for address in ("127.0.0.1", "::1", "203.0.113.5"):
        _assert_locked(service.from_(address).get("/v1/tokens", headers=basic(BOB)))
    _lock_alice(service)
    for address in ("127.0.0.1", "::1"):
        _assert_locked(service.from_(address).get("/v1/tokens", headers=basic(ALICE)))
    print(
        f"\n40 wrong passwords for bob from 127.0.0.1 with the defaults: {answers.count(401)} checked (401), "
        f"{answers.count(429)} refused (429 ACCOUNT_LOCKED)"
    )


def test_an_exempt_address_exempts_super_users_alone_and_throttles_their_guesses(
    make_service: Callable[..., Service],  # noqa: F811
    checks: dict[str, int],  # noqa: F811
    raw_zk: KazooClient,
) -> None:
    """Where an operator still lists exempt addresses: an ordinary account is locked from there as from anywhere;
    a super user's is not, but guesses from there are refused after auth.failures.max (the pair's limit), where
    once 60 wrong passwords in a row were all checked."""
    service = _service(make_service, auth_lockout_exempt_addresses="127.0.0.1,::1")
    exempt = service.from_("127.0.0.1")
    for _ in range(THRESHOLD):
        assert exempt.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    _assert_locked(exempt.get("/v1/tokens", headers=basic(ALICE)))
    assert [e["principal"] for e in service.audit("account.lock")] == ["User:alice"]

    for n in range(THRESHOLD):  # admin locked by a remote attacker
        service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic((ADMIN[0], f"guess-{n}")))
    _assert_locked(service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ADMIN)))
    assert service.from_("127.0.0.1").get("/v1/tokens", headers=basic(ADMIN)).status_code == 200
    checks.update(zookeeper=0, pbkdf2=0)
    answers = [
        service.from_("127.0.0.1").get("/v1/tokens", headers=basic((ADMIN[0], f"exempt-guess-{n}"))) for n in range(60)
    ]
    statuses = [answer.status_code for answer in answers]
    assert statuses == [401] * MAX_FAILURES + [429] * (60 - MAX_FAILURES)
    assert {answer.json()["error"] for answer in answers[MAX_FAILURES:]} == {"TOO_MANY_ATTEMPTS"}
    assert checks["pbkdf2"] == MAX_FAILURES * _hashes_per_check(service, checks)  # guesses checked, of 60
    assert len(_locks(raw_zk)) == 2  # alice's and admin's: the exempt address's failures locked nothing more
    print(
        f"\n60 wrong passwords for admin from an exempt address: {statuses.count(401)} checked (401), "
        f"{statuses.count(429)} throttled (429)"
    )


def test_failures_naming_no_known_user_are_one_row_per_address_and_window(
    make_service: Callable[..., Service],  # noqa: F811
) -> None:
    service = _service(make_service)
    attacker = service.from_("192.0.2.66")
    for n in range(60):
        name = f"made-up-{n}-" + "x" * 150
        assert attacker.get("/v1/tokens", headers=basic((name, "guess"))).status_code == 401
    service.clock.offset_ms += 60_000  # a window later the burst has ended: summarised at the next call
    assert attacker.get("/v1/tokens", headers=basic(("made-up-last", "guess"))).status_code == 401
    rows = [e for e in service.audit("authentication") if e["clientAddress"] == "192.0.2.66"]
    assert len(rows) == 3  # the first in full, the summary, the first of the next window
    first, summary, _ = rows
    assert first["principal"].startswith("User:made-up-0-")
    assert summary["principal"] is None
    assert summary["details"]["attempts"] == 59
    assert summary["details"]["unknownNames"] is True
    assert summary["details"]["sampleNames"] == [
        f"User:made-up-{n}-" + "x" * (64 - 14 - len(str(n))) for n in range(1, 6)
    ]
    # A known user's failures keep their own rows.
    assert attacker.get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    assert service.audit("authentication")[-1]["principal"] == "User:alice"


def test_unknown_names_are_locked_the_same_way(make_service: Callable[..., Service]) -> None:  # noqa: F811
    service = _service(make_service)
    for n in range(THRESHOLD):
        service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(("nobody\x00", "guess")))
    _assert_locked(service.from_("203.0.113.5").get("/v1/tokens", headers=basic(("nobody\x00", "guess"))))


def test_guesses_are_checked_and_counted_while_the_victims_password_is_known(
    make_service: Callable[..., Service],  # noqa: F811
    checks: dict[str, int],  # noqa: F811
) -> None:
    """The victim's services keep logging in, answered by the verified-password cache without waiting for the
    account's turn (app/service/attempts.py): the attacker's guesses between them are each still checked and
    counted, the lock comes at the threshold, and then refuses the known password too."""
    service = _service(make_service)

    def victim() -> Any:
        return service.from_("198.51.100.7").get("/v1/tokens", headers=basic(ALICE))

    assert victim().status_code == 200  # checked: known from now on
    per_check = _hashes_per_check(service, checks)
    checks.update(zookeeper=0, pbkdf2=0)
    for n in range(THRESHOLD - 1):
        assert service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
        assert victim().status_code == 200
    assert checks["pbkdf2"] == (THRESHOLD - 1) * per_check  # every guess, none of the victim's logins
    assert service.from_("192.0.2.99").get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    _assert_locked(victim())
    assert [e["principal"] for e in service.audit("account.lock")] == ["User:alice"]
    logins = service.audit("authentication")
    assert {e["outcome"] for e in logins} == {"denied"}  # successful logins are audited as before: not one by one
    assert all(ALICE[1] not in str(event) and WRONG_ALICE[1] not in str(event) for event in logins)


def test_a_changed_password_is_no_longer_known_and_each_try_of_it_is_counted(
    make_service: Callable[..., Service],  # noqa: F811
    checks: dict[str, int],  # noqa: F811
) -> None:
    """The old password was known (cached) when the change came: from the next request on it is checked, refused
    and counted like any guess, up to the lock."""
    service = _service(make_service)
    home = service.from_("198.51.100.7")
    for _ in range(2):
        assert home.get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    body = {"mechanism": "SCRAM-SHA-512", "password": "alice-new-pw"}
    changed = home.put("/v1/users/alice/credentials", json=body, headers=basic(ADMIN))
    assert changed.status_code in (200, 201, 204), changed.text
    checks.update(zookeeper=0, pbkdf2=0)
    for n in range(THRESHOLD):
        assert service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(ALICE)).status_code == 401
    assert checks["pbkdf2"] >= THRESHOLD  # each try checked
    _assert_locked(home.get("/v1/tokens", headers=basic((ALICE[0], "alice-new-pw"))))


def test_threshold_zero_turns_it_off(make_service: Callable[..., Service], raw_zk: KazooClient) -> None:  # noqa: F811
    service = make_service(auth_lockout_threshold=0, auth_failures_max=0)
    for n in range(30):
        assert service.from_(f"192.0.2.{n + 1}").get("/v1/tokens", headers=basic(WRONG_ALICE)).status_code == 401
    assert service.from_("203.0.113.5").get("/v1/tokens", headers=basic(ALICE)).status_code == 200
    assert _locks(raw_zk) == []


def _hashes_per_check(service: Service, counts: dict[str, int]) -> int:
    """The PBKDF2 runs of one password check (one per SCRAM mechanism), measured on a name no user has."""
    before = counts["pbkdf2"]
    assert service.from_("198.51.100.200").get("/v1/tokens", headers=basic(("measure", "x"))).status_code == 401
    ran = counts["pbkdf2"] - before
    counts["pbkdf2"] = before
    assert ran >= 1
    return ran


def _locks(raw_zk: KazooClient) -> list[str]:
    return [name for name in raw_zk.get_children(KtsZNodes.LOCKOUTS) if name.startswith("lock-")]
