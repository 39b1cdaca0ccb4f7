"""What ZooKeeper's user store alone does, on a real ZooKeeper (the cases every user store passes are the
contract suite's, tests/contract/test_user_store.py): the config znodes and notifications kafka-configs.sh reads."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.credentials import Mechanism
from app.domain.scram import derive, password_matches
from app.storage.zk.connection import ZkConnection
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import ConfigChangeZNode


@pytest.fixture
def store(zk_connect: str) -> Iterator[ZkUserStore]:
    connection = ZkConnection(zk_connect, session_timeout_ms=6000)
    connection.start()
    yield ZkUserStore(connection)
    connection.stop()


def test_put_then_read_both_mechanisms(store: ZkUserStore, raw_zk: KazooClient) -> None:
    for mechanism in Mechanism:
        store.put_credential("ann", mechanism, derive(mechanism, "pw", 4096))
    credentials = store.credentials("ann")
    assert set(credentials) == set(Mechanism)
    assert all(password_matches(m, c, "pw") for m, c in credentials.items())
    assert len(raw_zk.get_children(ConfigChangeZNode.ROOT)) == 2


def test_unreadable_user_config_counts_as_no_credentials(store: ZkUserStore, raw_zk: KazooClient) -> None:
    raw_zk.create("/config/users/broken", b"not json")
    assert store.credentials("broken") == {}
