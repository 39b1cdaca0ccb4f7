"""Account locks shared through the database (SqlLockoutStore) on a real PostgreSQL and SQLite, under the real
lockout service (AccountLocks) and audit log: a lock one replica publishes refuses logins on the other within
a poll; a super user's unlock on one reaches the other; an ended lock is released and audited once; lock
ends are the database's time, so a replica whose clock is wrong still refuses; any name is a key; the cap."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import Engine

from app.domain.acl import AclAuthorizer, AclSnapshot
from app.domain.audit import Action, EventQuery
from app.domain.authorization import Caller
from app.domain.clock import Clock, SystemClock
from app.domain.lockout import AccountLockout, Lock, LockoutPolicy
from app.domain.principal import KafkaPrincipal
from app.service.audit import Auditor
from app.service.lockout import AccountLocks
from app.storage.audit.sink import SqlAuditLog
from app.storage.sql import lockout_store
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.lockout_store import SqlLockoutStore
from tests.api.helpers import eventually

ADMIN = KafkaPrincipal.user("admin")
ACCOUNT = "User:alice"
POLICY = LockoutPolicy(threshold=4, window_ms=60_000, duration_ms=60_000)


class SkewedClock:
    """A replica whose clock is ``offset_ms`` off."""

    def __init__(self, offset_ms: int) -> None:
        self._offset_ms = offset_ms

    def now_ms(self) -> int:
        return SystemClock().now_ms() + self._offset_ms


@dataclass
class Replica:
    store: SqlLockoutStore
    locks: AccountLocks
    audit_log: SqlAuditLog


@pytest.fixture
def make_replica(coordination_db: str, engines: Callable[[str], Engine]) -> Iterator[Callable[..., Replica]]:
    started: list[SqlLockoutStore] = []

    def make(name: str, *, clock: Clock | None = None, policy: LockoutPolicy = POLICY, replicas: int = 2) -> Replica:
        clock = clock or SystemClock()
        engine = engines(coordination_db)
        store = SqlLockoutStore(engine, service_id=name, replicas=lambda: replicas, clock=clock)
        store.start()
        started.append(store)
        audit_log = SqlAuditLog(engine, service_id=name, clock=clock)
        locks = AccountLocks(
            AccountLockout(policy, clock),
            store,
            auditor=Auditor(audit_log, SqlIntentMarks(engine, clock=clock)),
            authorizer=AclAuthorizer([ADMIN], AclSnapshot),
            clock=clock,
        )
        return Replica(store, locks, audit_log)

    yield make
    for store in started:
        store.stop()


def test_a_lock_published_on_one_replica_refuses_logins_on_the_other_within_a_poll(
    make_replica: Callable[..., Replica],
) -> None:
    first, second = make_replica("kts-a"), make_replica("kts-b")
    assert second.locks.wait_ms(ACCOUNT) == 0

    first.locks.failed(ACCOUNT)
    first.locks.failed(ACCOUNT)  # this replica's share of 4 between 2 replicas: locked and published
    published = time.monotonic()

    assert first.locks.wait_ms(ACCOUNT) > 0  # at once on the replica that locked it
    took_s = eventually(lambda: second.locks.wait_ms(ACCOUNT) > 0, timeout_s=30)
    assert 55_000 < second.locks.wait_ms(ACCOUNT) <= 60_000
    assert second.locks.wait_ms("User:bob") == 0
    print(
        f"\nlock seen by the other replica {time.monotonic() - published:.2f} s after publishing "
        f"(poll {lockout_store.POLL_INTERVAL_S:.0f} s; waited {took_s:.2f} s)"
    )
    (event,) = first.audit_log.query(EventQuery(action=Action.ACCOUNT_LOCK.value))
    assert event.details["replicas"] == 2 and "published" not in event.details


def test_a_super_users_unlock_on_one_replica_lifts_the_lock_on_the_other(make_replica: Callable[..., Replica]) -> None:
    first, second = make_replica("kts-a"), make_replica("kts-b")
    first.locks.failed(ACCOUNT)
    first.locks.failed(ACCOUNT)
    eventually(lambda: second.locks.wait_ms(ACCOUNT) > 0)

    assert second.locks.unlock(Caller(ADMIN), "alice") is True

    assert second.locks.wait_ms(ACCOUNT) == 0
    eventually(lambda: first.locks.wait_ms(ACCOUNT) == 0)


def test_an_ended_lock_is_released_once_whichever_replicas_see_it_ended(make_replica: Callable[..., Replica]) -> None:
    short = LockoutPolicy(threshold=2, window_ms=60_000, duration_ms=1500)
    first, second = make_replica("kts-a", policy=short), make_replica("kts-b", policy=short)
    first.locks.failed(ACCOUNT)
    eventually(lambda: second.locks.wait_ms(ACCOUNT) > 0)

    eventually(lambda: first.locks.wait_ms(ACCOUNT) == 0 and second.locks.wait_ms(ACCOUNT) == 0)
    first.locks.wait_ms(ACCOUNT)
    second.locks.wait_ms(ACCOUNT)

    unlocks = [
        event
        for replica in (first, second)
        for event in replica.audit_log.query(EventQuery(action=Action.ACCOUNT_UNLOCK.value))
    ]
    assert len({event.id for event in unlocks}) == 1
    assert unlocks[0].details["reason"] == "expired"
    assert first.store.locked_until(ACCOUNT) is None


def test_lock_ends_are_the_databases_time_so_a_replica_with_a_wrong_clock_still_refuses(
    make_replica: Callable[..., Replica],
) -> None:
    """The locking replica's clock is ten minutes fast, the other's right: a one-minute lock lasts a minute on
    both. Ends kept in each replica's own time would have it ended nine minutes ago on the other."""
    fast = make_replica("kts-fast", clock=SkewedClock(600_000))
    right = make_replica("kts-right")
    fast.locks.failed(ACCOUNT)
    fast.locks.failed(ACCOUNT)

    eventually(lambda: right.locks.wait_ms(ACCOUNT) > 0)
    assert 55_000 < right.locks.wait_ms(ACCOUNT) <= 60_000
    assert 55_000 < fast.locks.wait_ms(ACCOUNT) <= 60_000
    assert right.store.release(ACCOUNT, expired_by_ms=SystemClock().now_ms()) == []  # not ended by the database


@pytest.mark.parametrize("account", ["User:nul\x00here", "User:\udcff\ud800", "User:" + "x" * 10_000, "User:ünï"])
def test_any_account_name_is_a_key(make_replica: Callable[..., Replica], account: str) -> None:
    first, second = make_replica("kts-a"), make_replica("kts-b")
    now = SystemClock().now_ms()
    first.store.publish(Lock(account, now, now + 60_000, 2))

    eventually(lambda: second.store.locked_until(account) is not None)
    assert second.store.locked_until("User:other") is None
    (end,) = second.store.release(account)
    assert abs(end - (now + 60_000)) < 5_000
    assert second.store.locked_until(account) is None


def test_past_the_cap_a_replica_keeps_new_locks_to_itself(
    make_replica: Callable[..., Replica], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lockout_store, "MAX_PUBLISHED_LOCKS", 3)
    first, second = make_replica("kts-a"), make_replica("kts-b")
    now = SystemClock().now_ms()
    for n in range(5):
        first.store.publish(Lock(f"User:u{n}", now, now + 60_000, 2))
    second.store.poll()

    assert [second.store.locked_until(f"User:u{n}") is not None for n in range(5)] == [True] * 3 + [False] * 2
