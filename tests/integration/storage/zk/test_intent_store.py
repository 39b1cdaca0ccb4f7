"""What ZooKeeper's intent store alone does (the cases every intent store passes are the contract suite's,
tests/contract/test_intent_store.py), on a real ZooKeeper: markers cleared while a deletion is in flight go
together in one transaction once it is answered, none is left behind, and one already gone (the reconciler
deleted it first) does not keep the others out of the transaction; a batch marker whose data is not its events'
ids vouches for none."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from kazoo.client import KazooClient

from app.storage.zk.connection import ZkConnection
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.znodes import KtsZNodes
from tests.api.helpers import eventually


def _markers(raw_zk: KazooClient, event_ids: range, intents: ZkIntentStore) -> None:
    raw_zk.ensure_path(KtsZNodes.AUDIT_INTENTS)
    transaction = raw_zk.transaction()
    for event_id in event_ids:
        transaction.create(KtsZNodes.audit_intent(event_id), b"")
    assert all(not isinstance(result, Exception) for result in transaction.commit())


def test_markers_cleared_at_once_by_many_threads_are_all_deleted_in_fewer_writes(
    zk: ZkConnection, raw_zk: KazooClient
) -> None:
    intents = ZkIntentStore(zk)
    event_ids = range(1, 401)
    _markers(raw_zk, event_ids, intents)
    before = raw_zk.exists(KtsZNodes.AUDIT_INTENTS)
    assert before is not None

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(intents.clear, event_ids))

    eventually(lambda: raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == [])
    # Each transaction is one ZooKeeper write (one zxid) whatever it deletes: far fewer writes than markers.
    after = raw_zk.exists(KtsZNodes.AUDIT_INTENTS)
    assert after is not None
    assert after.cversion - before.cversion == len(event_ids)
    assert after.pzxid - before.pzxid < len(event_ids)


def test_a_marker_already_gone_does_not_keep_the_others(zk: ZkConnection, raw_zk: KazooClient) -> None:
    intents = ZkIntentStore(zk)
    _markers(raw_zk, range(1, 51), intents)
    raw_zk.delete(
        KtsZNodes.audit_intent(25)
    )  # deleted by the reconciler first: a transaction naming it is refused whole

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(intents.clear, range(1, 51)))

    eventually(lambda: raw_zk.get_children(KtsZNodes.AUDIT_INTENTS) == [])


def test_a_marker_cleared_while_disconnected_is_left_to_the_reconciler(zk_connect: str, raw_zk: KazooClient) -> None:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    intents = ZkIntentStore(connection)
    _markers(raw_zk, range(1, 3), intents)
    connection.stop()

    intents.clear(1)  # neither raises nor hangs
    intents.clear(2)

    assert sorted(raw_zk.get_children(KtsZNodes.AUDIT_INTENTS)) == sorted(
        KtsZNodes.audit_intent(event_id).rpartition("/")[2] for event_id in (1, 2)
    )


def test_a_batch_marker_whose_data_is_unreadable_vouches_for_nothing(
    zk: ZkConnection, raw_zk: KazooClient, caplog: pytest.LogCaptureFixture
) -> None:
    """kts never writes one, but a hand-made marker must not have pending events settled as applied."""
    intents = ZkIntentStore(zk)
    raw_zk.ensure_path(KtsZNodes.AUDIT_INTENTS)
    raw_zk.create(f"{KtsZNodes.AUDIT_INTENTS}/5-9", b"not a list of ids")
    raw_zk.create(f"{KtsZNodes.AUDIT_INTENTS}/10-12", b'["10", 11, 12]')
    raw_zk.create(f"{KtsZNodes.AUDIT_INTENTS}/not-a-marker", b"[1, 2]")
    raw_zk.create(KtsZNodes.audit_intent(7), b"")

    with caplog.at_level(logging.WARNING):
        assert intents.existing(list(range(1, 13))) == {7}
        assert intents.marks() == [[7]]

    assert sum("ignoring the audit intent marker" in record.getMessage() for record in caplog.records) == 4
