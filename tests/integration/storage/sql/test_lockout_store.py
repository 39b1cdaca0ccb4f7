"""What the database's lock store (SqlLockoutStore) alone does, on a real PostgreSQL and SQLite; the cases every
lockout store passes are the contract suite's (tests/contract/test_lockout_store.py). Under the real lockout
service a lock on one replica refuses the right password on the other; each replica estimates the database's
clock, whatever its own says; the table holds rows the leader deletes; a release is heard once by each replica."""

from __future__ import annotations

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
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.lockout_store import SqlLockoutStore
from app.storage.sql.tables import account_locks
from tests.api.helpers import eventually

DURATION = 600_000
HOUR = 3_600_000
ADMIN = KafkaPrincipal.user("admin")


class SkewedClock(SystemClock):
    def __init__(self, offset_ms: int) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms


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
            clock=SkewedClock(clock_offset_ms),
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


def test_a_replica_whose_clock_runs_ahead_reads_the_databases_time(
    make_store: MakeStore, coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    honest = make_store("replica-a")
    ahead = make_store("replica-b", clock_offset_ms=HOUR)
    assert honest.share(lock("User:alice"))
    eventually(lambda: ahead.locked_ms(account_key("User:alice")) > 0)

    assert abs(ahead.now_ms() - honest.now_ms()) < 10_000  # both read the database's clock, not their own
    assert ahead.remove_ended() == 0
    assert _rows(engines(coordination_db)) == 1


def test_the_leader_deletes_the_rows_of_ended_locks_and_spent_releases(
    make_store: MakeStore, coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    store = make_store("replica-a")
    assert store.share(lock("User:gone", duration_ms=1))
    assert store.share(lock("User:alice"))
    assert store.release(account_key("User:bob"), duration_ms=1) is False
    engine = engines(coordination_db)
    eventually(lambda: store.remove_ended() >= 0 and _rows(engine) == 1)


def test_a_release_is_heard_once_by_each_replica(make_store: MakeStore) -> None:
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
