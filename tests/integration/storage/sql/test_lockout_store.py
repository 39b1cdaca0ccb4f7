"""Account locks shared through the database (SqlLockoutStore) on a real PostgreSQL and SQLite: a lock one replica
shares reaches the other within a poll, and under the real lockout service refuses the right password there; a
lock lasts its duration by the database's clock, so a replica whose clock runs an hour ahead neither ends it
early nor deletes it as leader; the leader deletes ended locks and spent releases; only locks in force count
towards the bound; a release reaches every replica's listeners; any name is a key."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine, func, select

from app.domain.acl import AclAuthorizer, AclSnapshot
from app.domain.authorization import Caller
from app.domain.clock import SystemClock
from app.domain.lockout import AccountLockout, Lock, LockoutPolicy, account_key
from app.domain.principal import KafkaPrincipal
from app.service.audit import Auditor
from app.service.lockout import AccountLocks
from app.storage.audit.sink import SqlAuditLog
from app.storage.sql import lockout_store
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.lockout_store import SqlLockoutStore
from app.storage.sql.tables import account_locks
from tests.api.helpers import eventually
from tests.clocks import ShiftedClock

DURATION = 600_000
HOUR = 3_600_000
ADMIN = KafkaPrincipal.user("admin")


MakeStore = Callable[..., SqlLockoutStore]


@pytest.fixture
def make_store(coordination_db: str, engines: Callable[[str], Engine]) -> Iterator[MakeStore]:
    started: list[SqlLockoutStore] = []

    def make(
        service_id: str, *, clock_offset_ms: int = 0, max_shared: int = 1_000, replicas: int = 2
    ) -> SqlLockoutStore:
        store = SqlLockoutStore(
            engines(coordination_db),
            service_id=service_id,
            replicas=lambda: replicas,
            clock=ShiftedClock(clock_offset_ms),
            max_shared=max_shared,
        )
        store.start()
        started.append(store)
        return store

    yield make
    for store in started:
        store.stop()


def lock(account: str, duration_ms: int = DURATION) -> Lock:
    return Lock(account_key(account), account, failures=5, duration_ms=duration_ms, locked_at_ms=0)


def _rows(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(account_locks)).scalar_one())


@pytest.mark.parametrize("account", ["User:alice", "User:\x00\x1b[2J", "User:\ud800", "User:" + "é" * 10_000])
def test_a_lock_shared_on_one_replica_reaches_the_other_within_a_poll(make_store: MakeStore, account: str) -> None:
    first, second = make_store("replica-a"), make_store("replica-b")
    key = account_key(account)

    assert first.share(lock(account))
    shared = time.monotonic()

    assert DURATION - 5_000 < first.locked_ms(key) <= DURATION  # its own write, at once
    took_s = eventually(lambda: second.locked_ms(key) > 0, timeout_s=30)
    assert DURATION - 5_000 < second.locked_ms(key) <= DURATION
    assert second.locked_ms(account_key("User:bob")) == 0
    print(
        f"\nlock seen by the other replica {time.monotonic() - shared:.2f} s after it was shared "
        f"(poll {lockout_store.POLL_INTERVAL_S:.0f} s; waited {took_s:.2f} s)"
    )


def test_under_the_lockout_service_a_lock_on_one_replica_refuses_the_other(
    coordination_db: str, engines: Callable[[str], Engine], make_store: MakeStore
) -> None:
    """Two replicas of the real lockout (threshold 4, share 2 each): two failures on one lock the account on
    both; a super user's unlock on the second lifts it on the first too."""
    policy = LockoutPolicy(threshold=4, window_ms=60_000, duration_ms=DURATION)
    replicas = []
    for name in ("replica-a", "replica-b"):
        store = make_store(name)
        engine = engines(coordination_db)
        auditor = Auditor(
            SqlAuditLog(engine, service_id=name, clock=SystemClock()), SqlIntentMarks(engine, clock=SystemClock())
        )
        replicas.append(
            AccountLocks(
                AccountLockout(policy, SystemClock()),
                store,
                auditor=auditor,
                authorizer=AclAuthorizer([ADMIN], AclSnapshot),
            )
        )
    first, second = replicas
    key = account_key("User:alice")
    for _ in range(2):
        assert first.begin(key) == 0
        first.failed(key, "User:alice", "192.0.2.1")

    assert first.wait_ms(key) > 0
    eventually(lambda: second.begin(key) > 0, timeout_s=30)  # the right password would not even be checked

    assert second.unlock(Caller(ADMIN), "alice").every_replica
    assert second.wait_ms(key) == 0
    eventually(lambda: first.wait_ms(key) == 0, timeout_s=30)  # the shared lock and its own, forgotten


def test_a_replica_whose_clock_runs_ahead_sees_the_databases_time(
    make_store: MakeStore, coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    """An hour ahead, that replica would have seen every lock as ended and deleted it as leader: it sees the lock
    in force, and deletes nothing that has not ended by the database's clock."""
    honest = make_store("replica-a")
    ahead = make_store("replica-b", clock_offset_ms=HOUR)
    key = account_key("User:alice")
    assert honest.share(lock("User:alice"))

    eventually(lambda: ahead.locked_ms(key) > 0)
    remaining = ahead.locked_ms(key)
    assert DURATION - 10_000 < remaining <= DURATION
    assert abs(ahead.now_ms() - honest.now_ms()) < 10_000  # both read the database's clock, not their own
    assert ahead.remove_ended() == 0
    assert _rows(engines(coordination_db)) == 1
    assert ahead.share(lock("User:bob"))  # and a lock the skewed replica shares lasts its duration too
    eventually(lambda: honest.locked_ms(account_key("User:bob")) > DURATION - 10_000)
    print(f"\nclock {HOUR} ms ahead: the lock still lasts {remaining} of {DURATION} ms on that replica")


def test_the_leader_deletes_ended_locks_and_spent_releases(
    make_store: MakeStore, coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    store = make_store("replica-a")
    for n in range(150):
        assert store.share(lock(f"User:u{n}", duration_ms=1))
    assert store.share(lock("User:alice"))
    assert store.release(account_key("User:gone"), duration_ms=1) is False
    engine = engines(coordination_db)
    removed: list[int] = []

    def spent() -> bool:  # until every 1-ms lock and the release have ended by the database's clock
        removed.append(store.remove_ended())
        return _rows(engine) == 1

    eventually(spent)
    assert sum(removed) == 150
    assert store.locked_ms(account_key("User:alice")) > 0


def test_only_locks_in_force_count_towards_the_bound(
    make_store: MakeStore, coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    store = make_store("replica-a", max_shared=20)
    for n in range(20):
        assert store.share(lock(f"User:u{n}", duration_ms=1))
    eventually(lambda: store.locked_ms(account_key("User:u19")) == 0)
    assert store.share(lock("User:alice"))  # the 20 ended ones do not count
    for n in range(19):
        assert store.share(lock(f"User:v{n}"))
    assert not store.share(lock("User:bob"))  # 20 in force: kept by the replica, nothing written
    assert store.in_force() == 20 and _rows(engines(coordination_db)) == 40
    store.remove_ended()
    assert _rows(engines(coordination_db)) == 20


def test_a_release_reaches_every_replica(make_store: MakeStore) -> None:
    first, second = make_store("replica-a"), make_store("replica-b")
    heard: list[tuple[str, str]] = []
    first.on_released(lambda key: heard.append(("first", key)))
    second.on_released(lambda key: heard.append(("second", key)))
    key = account_key("User:alice")
    assert first.share(lock("User:alice"))
    eventually(lambda: second.locked_ms(key) > 0)

    assert second.release(key, DURATION) is True

    assert second.locked_ms(key) == 0
    assert heard == [("second", key)]  # its own at once
    eventually(lambda: first.locked_ms(key) == 0)
    eventually(lambda: ("first", key) in heard)
    first.poll()
    second.poll()
    assert sorted(heard) == [("first", key), ("second", key)]  # once each
    assert first.release(key, DURATION) is False  # released already


def test_an_operator_lists_the_locks_in_force_from_the_database(make_store: MakeStore) -> None:
    """What ``kts lockout list`` reads through the Kafka protocol: the locks in force by the database's clock, by
    key alone (the table keeps no names: the audit trail's account.lock events name them)."""
    replica = make_store("replica-a")
    assert replica.share(lock("User:alice"))
    assert replica.share(lock("User:gone", duration_ms=1))
    assert replica.share(lock("User:bob"))
    replica.release(account_key("User:bob"), DURATION)
    eventually(lambda: replica.locked_ms(account_key("User:gone")) == 0)

    (found,) = make_store("operator").in_force_locks()
    assert (found.key, found.account) == (account_key("User:alice"), None)
    assert DURATION - 30_000 < found.remaining_ms <= DURATION
