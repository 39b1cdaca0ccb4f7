"""Markers cleared soon while the session commits ride on its next transaction (one ZooKeeper write for both), on a
real ZooKeeper, and so do those cleared between the transactions of concurrent writers; those no transaction takes are
deleted on their own shortly after; on an idle session they go at once; a carried marker already gone, or a
transaction refused for its own reasons, costs no change and no marker."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from app.domain.errors import KtsError
from app.storage.zk import deferred_deletes
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.transaction import ChangeTransaction
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually

SUBJECT = Subject("a test", "test")


@pytest.fixture
def intents(zk: ZkConnection, raw_zk: KazooClient) -> ZkIntentStore:
    raw_zk.ensure_path(KtsZNodes.AUDIT_INTENTS)
    raw_zk.ensure_path("/test-deferred")
    for event_id in range(1, 11):
        raw_zk.create(KtsZNodes.audit_intent(event_id), b"")
    return ZkIntentStore(zk)


def _markers(raw_zk: KazooClient) -> list[int]:
    return sorted(int(name) for name in raw_zk.get_children(KtsZNodes.AUDIT_INTENTS))


def _assert_carried_by(raw_zk: KazooClient, path: str) -> None:
    """One write: the markers went with the change that created ``path``."""
    created = raw_zk.exists(path)
    folder = raw_zk.exists(KtsZNodes.AUDIT_INTENTS)
    assert created is not None and folder is not None
    assert folder.pzxid == created.czxid


def _create(zk: ZkConnection, path: str) -> None:
    transaction = ChangeTransaction(zk)
    transaction.create(path, b"x")
    transaction.commit(SUBJECT)


def test_markers_cleared_while_the_session_commits_ride_on_its_next_transaction(
    zk: ZkConnection, raw_zk: KazooClient, intents: ZkIntentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_deletes, "DELAY_S", 600.0)  # no deletion of their own in this test's time
    zk.deferred_deletes.committing()  # as while another request's transaction is answered
    intents.clear_soon([1, 2])
    intents.clear_batch_soon([3])
    assert _markers(raw_zk) == list(range(1, 11))  # waiting for a transaction

    _create(zk, "/test-deferred/a")

    assert _markers(raw_zk) == list(range(4, 11))
    _assert_carried_by(raw_zk, "/test-deferred/a")
    zk.deferred_deletes.committed()


def test_markers_no_transaction_takes_are_deleted_on_their_own(
    zk: ZkConnection, raw_zk: KazooClient, intents: ZkIntentStore
) -> None:
    zk.deferred_deletes.committing()
    intents.clear_soon([1, 2, 3])
    zk.deferred_deletes.committed()  # and none follows

    eventually(lambda: _markers(raw_zk) == list(range(4, 11)))


def test_on_an_idle_session_markers_are_deleted_at_once(
    zk: ZkConnection, raw_zk: KazooClient, intents: ZkIntentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_deletes, "DELAY_S", 600.0)
    intents.clear_soon([1])
    intents.clear(2)

    eventually(lambda: _markers(raw_zk) == list(range(3, 11)))  # long before any timer would send them


def test_markers_cleared_between_transactions_of_concurrent_writers_ride_on_the_next_one(
    zk: ZkConnection, raw_zk: KazooClient, intents: ZkIntentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_deletes, "DELAY_S", 600.0)
    _create(zk, "/test-deferred/first")
    _create(zk, "/test-deferred/second")
    intents.clear_soon([1])  # transactions one after another, none under way: deleted at once
    eventually(lambda: _markers(raw_zk) == list(range(2, 11)))

    zk.deferred_deletes.committing()  # as another request's transaction under way...
    _create(zk, "/test-deferred/overlapping")  # ...while this one is committed: concurrent writers
    zk.deferred_deletes.committed()
    intents.clear_soon([2, 3])  # none is being committed now, yet they wait for the next
    assert _markers(raw_zk) == list(range(2, 11))

    _create(zk, "/test-deferred/third")

    assert _markers(raw_zk) == list(range(4, 11))
    _assert_carried_by(raw_zk, "/test-deferred/third")


def test_a_carried_marker_already_gone_does_not_cost_the_change(
    zk: ZkConnection, raw_zk: KazooClient, intents: ZkIntentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_deletes, "DELAY_S", 600.0)
    zk.deferred_deletes.committing()
    intents.clear_soon([1, 2])
    raw_zk.delete(KtsZNodes.audit_intent(1))  # the reconciler deleted it first: a transaction naming it fails
    zk.deferred_deletes.committed()
    zk.deferred_deletes.committing()

    _create(zk, "/test-deferred/b")

    assert raw_zk.exists("/test-deferred/b") is not None
    eventually(lambda: _markers(raw_zk) == list(range(3, 11)))  # the other one, deleted on its own
    zk.deferred_deletes.committed()


def test_a_transaction_refused_for_its_own_reasons_gives_the_markers_back(
    zk: ZkConnection, raw_zk: KazooClient, intents: ZkIntentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_deletes, "DELAY_S", 600.0)
    raw_zk.create("/test-deferred/taken", b"")
    zk.deferred_deletes.committing()
    intents.clear_soon([1, 2])

    with pytest.raises(KtsError):
        _create(zk, "/test-deferred/taken")  # exists already: the transaction is refused
    assert _markers(raw_zk) == list(range(1, 11))  # rolled back with it, and waiting again
    _create(zk, "/test-deferred/c")

    assert _markers(raw_zk) == list(range(3, 11))
    zk.deferred_deletes.committed()
