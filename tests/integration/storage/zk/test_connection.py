"""ZkConnection on a real ZooKeeper: the session state it reports without kazoo's types, reads of absent znodes."""

from __future__ import annotations

from kazoo.client import KazooClient

from app.storage.zk.connection import SessionState, ZkConnection


def test_the_session_state_is_kts_own_and_follows_the_session(zk_connect: str) -> None:
    zk = ZkConnection(zk_connect, session_timeout_ms=6000)
    assert zk.state is SessionState.LOST  # not started
    zk.start()
    try:
        assert zk.state is SessionState.CONNECTED
        assert zk.state == "CONNECTED"  # a plain string for those that only read it (metrics)
    finally:
        zk.stop()
    assert zk.state is SessionState.LOST


def test_get_answers_none_for_an_absent_znode_and_data_with_version_otherwise(
    zk_connect: str, raw_zk: KazooClient
) -> None:
    raw_zk.create("/present", b"data")
    raw_zk.set("/present", b"again")
    zk = ZkConnection(zk_connect, session_timeout_ms=6000)
    zk.start()
    try:
        assert zk.get("/absent") is None
        found = zk.get("/present")
        assert found is not None and found[0] == b"again" and found[1].version == 1
    finally:
        zk.stop()
