"""The raw ZooKeeper create ceiling (``bench.harness.raw_create_ceiling``) against a real ZooKeeper: it counts
only the transactions ZooKeeper committed, each a token znode with its notification, and counts refused ones
apart (it once wrote into a chroot without the token folders and counted every failed transaction)."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.security import READ_ACL_UNSAFE

from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from bench.harness import raw_create_ceiling


def test_counts_the_committed_transactions_in_a_chroot_without_the_token_folders(
    zk_connect: str, raw_zk: KazooClient
) -> None:
    assert raw_zk.exists(TokenZNode.ROOT) is None  # the parents are the ceiling's to make

    ceiling = raw_create_ceiling(zk_connect, seconds=0.5, in_flight=8)

    assert ceiling["errors"] == 0 and ceiling["transactions"] > 0
    assert len(raw_zk.get_children(TokenZNode.ROOT)) == ceiling["transactions"]
    assert len(raw_zk.get_children(TokenChangeZNode.ROOT)) == ceiling["transactions"]


def test_counts_refused_transactions_apart(zk_connect: str, raw_zk: KazooClient) -> None:
    raw_zk.ensure_path("/delegation_token")
    raw_zk.create(TokenZNode.ROOT, acl=READ_ACL_UNSAFE)  # nobody may create a token under it

    ceiling = raw_create_ceiling(zk_connect, seconds=0.3, in_flight=8)

    assert ceiling["transactions"] == 0 and ceiling["per_s"] == 0
    assert ceiling["errors"] > 0
    assert raw_zk.get_children(TokenChangeZNode.ROOT) == []  # each refused as a whole
