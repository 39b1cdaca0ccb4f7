"""Group commit on SQLite and PostgreSQL: concurrent writers share commits, each returns only once its own
write is committed, and one failing write fails alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, Engine, event, func, insert, select

from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.group_commit import GroupCommitter
from app.storage.audit.tables import audit_events

WRITERS = 16
WRITES_EACH = 25


@pytest.fixture
def engine(any_audit_db: str) -> Iterator[Engine]:
    engine = make_engine(any_audit_db)
    migrations.upgrade(engine)
    yield engine
    engine.dispose()


def _insert(marker: str) -> object:
    def job(connection: Connection) -> int:
        row = {"timestamp": 1, "action": "token.create", "outcome": "pending", "service_id": "s", "details": marker}
        return int(connection.execute(insert(audit_events).values(**row)).inserted_primary_key[0])  # type: ignore[index]

    return job


def _committed_ids(engine: Engine) -> set[int]:
    with engine.connect() as connection:
        return set(connection.execute(select(audit_events.c.id)).scalars())


def test_concurrent_writes_are_all_committed_with_fewer_commits_than_writes(engine: Engine) -> None:
    committer = GroupCommitter(engine)
    commits = 0

    @event.listens_for(engine, "commit")
    def count(_connection: object) -> None:
        nonlocal commits
        commits += 1

    returned: list[int] = []
    not_yet_visible: list[int] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for k in range(WRITES_EACH):
            event_id = committer.run(_insert(f"{n}-{k}"))  # type: ignore[arg-type]
            visible = event_id in _committed_ids(engine)  # committed before run() returned
            with lock:
                returned.append(event_id)
                if not visible:
                    not_yet_visible.append(event_id)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert not_yet_visible == []
    assert len(returned) == len(set(returned)) == WRITERS * WRITES_EACH
    assert _committed_ids(engine) == set(returned)
    assert commits < WRITERS * WRITES_EACH  # writers waiting together shared commits


def test_a_failing_write_fails_alone_and_the_others_in_its_batch_commit(engine: Engine) -> None:
    committer = GroupCommitter(engine)
    gate = threading.Barrier(8)
    outcomes: dict[int, str] = {}

    def broken(connection: Connection) -> int:
        connection.execute(select(func.no_such_function()))
        return 0

    def writer(n: int) -> None:
        gate.wait()
        try:
            committer.run(broken if n == 3 else _insert(f"w{n}"))  # type: ignore[arg-type]
            outcomes[n] = "ok"
        except Exception:  # the database's own error (StoreUnavailable on SQLite, ProgrammingError on PostgreSQL)
            outcomes[n] = "failed"

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert outcomes == {n: "failed" if n == 3 else "ok" for n in range(8)}
    assert len(_committed_ids(engine)) == 7


def test_a_write_without_company_commits_on_its_own_thread(engine: Engine) -> None:
    committer = GroupCommitter(engine)
    assert committer.run(_insert("alone")) in _committed_ids(engine)  # type: ignore[arg-type]
