"""The operators' way in (app/service/break_glass.py) over in-memory ports: a release is audited before anything
is released and settled after, with the operating-system user; a release the store could not make is audited as
failed; an account is listed once, by its longest lock, and a lock the store keeps by key alone is named by its
``account.lock`` event."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, Outcome, StoredEvent
from app.domain.errors import StoreUnavailable
from app.domain.lockout import Lock, LockInForce, account_key
from app.service.break_glass import BreakGlass, Released
from tests.unit.fakes import FakeAuditLog, FakeClock, FakeLockoutStore

ADMIN = "User:admin"
DURATION = 900_000


class Listing:
    def __init__(self, locks: list[LockInForce]) -> None:
        self.locks = locks

    def in_force_locks(self) -> list[LockInForce]:
        return list(self.locks)


def setup(locks: tuple[LockInForce, ...] = ()) -> tuple[BreakGlass, FakeLockoutStore, FakeAuditLog]:
    clock = FakeClock()
    store = FakeLockoutStore(clock)
    log = FakeAuditLog()
    return BreakGlass(store, Listing(list(locks)), log, duration_ms=DURATION, clock=clock), store, log


def test_a_release_is_audited_with_the_operating_system_user() -> None:
    glass, store, log = setup()
    store.share(Lock(account_key(ADMIN), ADMIN, 5, DURATION, 0))
    assert glass.release("admin", operator="ops") == Released(ADMIN, was_locked=True)
    assert store.releases == [account_key(ADMIN)]
    ((event_id, pending),) = log.appended.items()
    assert (pending.action, pending.outcome, pending.owner, pending.principal) == (
        Action.LOCKOUT_RELEASE,
        Outcome.PENDING,
        ADMIN,
        None,
    )
    done = log.completed[event_id]
    assert (done.outcome, done.details) == (Outcome.SUCCEEDED, {"operatingSystemUser": "ops", "wasLocked": True})


def test_without_the_audit_database_nothing_is_released() -> None:
    glass, store, log = setup()
    log.down = True
    with pytest.raises(StoreUnavailable):
        glass.release("admin", operator="ops")
    assert store.releases == []


def test_a_release_the_store_could_not_make_is_audited_as_failed() -> None:
    glass, store, log = setup()
    store.fail_with = StoreUnavailable("ZooKeeper is away.")
    with pytest.raises(StoreUnavailable):
        glass.release("admin", operator="ops")
    (done,) = log.completed.values()
    assert (done.outcome, done.details["error"]) == (Outcome.FAILED, "SERVICE_UNAVAILABLE")


def test_each_account_is_listed_once_by_its_longest_lock_and_named_by_its_lock_event() -> None:
    alice, bob = account_key("User:alice"), account_key("User:bob")
    glass, _, log = setup(
        (LockInForce(alice, None, 5_000), LockInForce(alice, None, 9_000), LockInForce(bob, "User:bob", 1_000))
    )
    log.stored = [
        StoredEvent(
            7, 0, "account.lock", "succeeded", "User:alice", "User:alice", None, None, None, "a", None, None, {}
        )
    ]
    assert glass.locks() == [LockInForce(bob, "User:bob", 1_000), LockInForce(alice, "User:alice", 9_000)]
    (query,) = log.queries
    assert query.action == "account.lock"
