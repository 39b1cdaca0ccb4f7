"""The cluster watch and the write fence on a real ZooKeeper, with the znodes written as Kafka writes them
(tests/kafka_znodes.py): a KRaft controller's claim is seen within seconds, and no token, ACL or credential
write can land after it, even one whose fence was read before the claim."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from app.domain.acl import AccessControlEntry, PatternType, ResourcePattern
from app.domain.cluster_migration import Phase
from app.domain.credentials import Mechanism
from app.domain.errors import ClusterMigrating, ClusterNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.scram import derive
from app.domain.token import TokenInformation
from app.service.ports import CreateTerms, Renewal, TokenChange
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.cluster_watch import ClusterWatch
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import KtsZNodes, TokenZNode, UserConfigZNode
from tests import kafka_znodes
from tests.api.helpers import eventually
from tests.conftest import seed_kafka_cluster

ALICE = KafkaPrincipal.user("alice")


def _token(token_id: str) -> TokenInformation:
    return TokenInformation(token_id, ALICE, ALICE, (), 1000, 2000, 9000)


@pytest.fixture
def zk(zk_connect: str, raw_zk: KazooClient) -> Iterator[ZkConnection]:
    kafka_znodes.register_broker(raw_zk, 0)
    kafka_znodes.elect_zookeeper_controller(raw_zk, 0)
    connection = ZkConnection(zk_connect, session_timeout_ms=6000, require_cluster=True)
    connection.start()
    yield connection
    connection.stop()


@pytest.fixture
def watch(zk: ZkConnection) -> Iterator[ClusterWatch]:
    """Following the cluster (its worker thread running), and fencing every write of ``zk``."""
    cluster = ClusterWatch(zk, recheck_s=3600)  # only the watches may wake it: no polling hides a missed one
    zk.write_fence = cluster
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def frozen(zk: ZkConnection) -> ClusterWatch:
    """A fence that read the cluster once and never again on its own: what a replica believes in the instant
    between a KRaft controller's claim and the watch that reports it."""
    cluster = ClusterWatch(zk)
    cluster.refresh()
    zk.write_fence = cluster
    return cluster


def test_zookeeper_mode_admits_writes_checked_against_the_controller_epoch(
    watch: ClusterWatch, zk: ZkConnection, raw_zk: KazooClient
) -> None:
    state = watch.state
    assert state.phase is Phase.ZOOKEEPER
    assert state.view.cluster_id == "kts-test-cluster-id-0w"
    assert state.view.zookeeper_brokers == 1
    assert watch.admit() == ("/controller_epoch", raw_zk.exists("/controller_epoch").version)
    ZkTokenStore(zk).create(_token("FenceOpenTokenAAAAAAAA"))
    assert raw_zk.exists(TokenZNode.path("FenceOpenTokenAAAAAAAA"))


def test_a_kraft_claim_is_seen_by_the_watch_and_refuses_every_write(
    watch: ClusterWatch, zk: ZkConnection, raw_zk: KazooClient, caplog: pytest.LogCaptureFixture
) -> None:
    ZkTokenStore(zk).create(_token("BeforeClaimTokenAAAAAA"))
    kafka_znodes.provision_kraft_quorum(raw_zk)
    eventually(lambda: watch.state.phase is Phase.PRE_MIGRATION)
    ZkTokenStore(zk).create(_token("PreMigrationTokenAAAAA"))  # still ZooKeeper's: copied at the claim

    with caplog.at_level(logging.WARNING, logger="app.storage.zk.cluster_watch"):
        kafka_znodes.claim_for_kraft(raw_zk)
        eventually(lambda: watch.state.phase is Phase.MIGRATING)
        kafka_znodes.record_migration_done(raw_zk)
        eventually(lambda: watch.state.view.migration is not None and watch.state.view.migration.metadata_copied)
    refusals = [record.getMessage() for record in caplog.records if "refuses to write" in record.getMessage()]
    assert len(refusals) == 1  # one line, when it is seen
    assert "migrating" in refusals[0] and "bootstrap.servers" in refusals[0]

    tokens, acls, users = ZkTokenStore(zk), ZkAclStore(zk), ZkUserStore(zk)
    entry = AccessControlEntry("User:alice", "*", "CreateTokens", "Allow")
    attempts = [
        lambda: tokens.create(_token("AfterClaimTokenAAAAAAA")),
        lambda: tokens.change(
            "BeforeClaimTokenAAAAAA", lambda stored: TokenChange(stored.token.with_expiry(1500), 0, Renewal(-1))
        ),
        lambda: tokens.delete_many([("BeforeClaimTokenAAAAAA", 0, None)]),
        lambda: acls.change(ResourcePattern("User", "User:alice", PatternType.LITERAL), lambda now: now | {entry}),
        lambda: users.put_credential("bob", Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, "pw", 4096)),
    ]
    for attempt in attempts:
        with pytest.raises(ClusterMigrating) as refused:
            attempt()
        assert "bootstrap.servers" in refused.value.message
    assert raw_zk.exists(TokenZNode.path("AfterClaimTokenAAAAAAA")) is None
    assert raw_zk.get(TokenZNode.path("BeforeClaimTokenAAAAAA"))[1].version == 0
    assert raw_zk.exists("/kafka-acl/User/User:alice") is None
    assert raw_zk.exists(UserConfigZNode.path("bob")) is None
    assert tokens.get("BeforeClaimTokenAAAAAA") is not None  # reads go on


@pytest.mark.parametrize("claimed_before", ["nothing", "pre-migration"])
def test_a_write_in_flight_when_the_claim_lands_fails_as_a_whole(
    claimed_before: str, frozen: ClusterWatch, zk: ZkConnection, raw_zk: KazooClient
) -> None:
    if claimed_before == "pre-migration":
        kafka_znodes.provision_kraft_quorum(raw_zk)
        frozen.refresh()
    assert frozen.state.writes_allowed
    kafka_znodes.claim_for_kraft(raw_zk)  # the fence has not seen it: only the transaction's check stands
    intent = 7

    with pytest.raises(ClusterMigrating):
        ZkTokenStore(zk).create(_token("InFlightTokenAAAAAAAAA"), CreateTerms(intent))

    assert raw_zk.exists(TokenZNode.path("InFlightTokenAAAAAAAAA")) is None
    assert (
        raw_zk.exists(KtsZNodes.audit_intent(intent)) is None
    )  # so the audit event is failed, and reconciliation agrees
    assert raw_zk.get_children("/delegation_token/token_changes") == []
    assert frozen.state.phase is Phase.MIGRATING  # the failed check made it read again


def test_a_zookeeper_controller_election_meanwhile_is_read_again_and_the_write_made(
    frozen: ClusterWatch, zk: ZkConnection, raw_zk: KazooClient
) -> None:
    before = frozen.admit()
    kafka_znodes.resign_zookeeper_controller(raw_zk)
    kafka_znodes.register_broker(raw_zk, 1)
    kafka_znodes.elect_zookeeper_controller(raw_zk, 1)

    ZkTokenStore(zk).create(_token("AfterElectionTokenAAAA"))

    assert raw_zk.exists(TokenZNode.path("AfterElectionTokenAAAA"))
    assert frozen.admit() != before
    assert frozen.state.phase is Phase.ZOOKEEPER


def test_a_replica_started_on_a_migrating_cluster_refuses_from_the_start(zk: ZkConnection, raw_zk: KazooClient) -> None:
    kafka_znodes.provision_kraft_quorum(raw_zk)
    kafka_znodes.claim_for_kraft(raw_zk)
    resigned = ClusterWatch(zk)
    zk.write_fence = resigned
    resigned.start()
    try:
        assert resigned.state.phase is Phase.MIGRATING
        with pytest.raises(ClusterMigrating):
            ZkTokenStore(zk).create(_token("NeverWrittenTokenAAAAA"))
    finally:
        resigned.stop()


def test_garbage_in_controller_refuses_writes_until_it_reads_as_kafka_writes_it(
    watch: ClusterWatch, zk: ZkConnection, raw_zk: KazooClient
) -> None:
    raw_zk.delete("/controller")
    raw_zk.create("/controller", b"\x00garbage")
    eventually(lambda: watch.state.phase is Phase.UNKNOWN)
    with pytest.raises(ClusterMigrating):
        ZkTokenStore(zk).create(_token("GarbageTokenAAAAAAAAAA"))
    raw_zk.set("/controller", kafka_znodes.zookeeper_controller(0))
    eventually(lambda: watch.state.phase is Phase.ZOOKEEPER)
    ZkTokenStore(zk).create(_token("GarbageTokenAAAAAAAAAA"))


def test_brokers_leaving_zookeeper_make_the_cluster_migrated(watch: ClusterWatch, raw_zk: KazooClient) -> None:
    kafka_znodes.provision_kraft_quorum(raw_zk)
    kafka_znodes.claim_for_kraft(raw_zk)
    eventually(lambda: watch.state.phase is Phase.MIGRATING)
    raw_zk.delete("/brokers/ids/0")  # the broker restarted as a KRaft broker
    eventually(lambda: watch.state.phase is Phase.MIGRATED)


# The wrong-cluster guard (ZkConnection's require_cluster).


def test_a_path_without_a_kafka_cluster_is_refused_before_anything_is_created(zookeeper: object) -> None:
    from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper

    assert isinstance(zookeeper, EmbeddedZooKeeper)
    connect = f"{zookeeper.connect_string}/kafak"  # the chroot mistyped
    connection = ZkConnection(connect, session_timeout_ms=6000, require_cluster=True)
    with pytest.raises(ClusterNotFound) as refused:
        connection.start()
    assert "/kafak/cluster/id does not exist" in refused.value.message
    assert "zookeeper.cluster.required=false" in refused.value.message
    raw = KazooClient(hosts=zookeeper.connect_string)
    raw.start(10)
    try:
        assert raw.exists("/kafak") is None  # nothing created there
        raw.create("/kafak/cluster/id", b'{"version":"1"}', makepath=True)
        with pytest.raises(ClusterNotFound, match="has no id"):
            ZkConnection(connect, session_timeout_ms=6000, require_cluster=True).start()
        raw.delete("/kafak", recursive=True)
    finally:
        raw.stop()
        raw.close()
    unguarded = ZkConnection(connect, session_timeout_ms=6000, require_cluster=False)
    unguarded.start()  # the operator's choice: start before the first broker
    unguarded.stop()


def test_a_cluster_at_the_root_is_found(zookeeper: object, tmp_path: object) -> None:
    from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper

    assert isinstance(zookeeper, EmbeddedZooKeeper)
    # The session's shared server has no /cluster/id at its root unless a test put one: use a chroot as root.
    chroot = "/kts-root-cluster"
    seed_kafka_cluster(zookeeper.connect_string, chroot)
    connection = ZkConnection(f"{zookeeper.connect_string}{chroot}", session_timeout_ms=6000, require_cluster=True)
    connection.start()
    connection.stop()


def test_brokers_registering_without_a_controller_epoch_are_seen_at_once_and_refuse_writes(
    zk_connect: str, raw_zk: KazooClient
) -> None:
    """No /brokers/ids yet: the watch must learn of the first registration from ZooKeeper (its exists() watch), not
    from the next reading (an hour here). Brokers without /controller_epoch leave the fence nothing to check: writes
    stop, the reason named."""
    connection = ZkConnection(zk_connect, session_timeout_ms=6000, require_cluster=True)
    connection.start()
    cluster = ClusterWatch(connection, recheck_s=3600)
    connection.write_fence = cluster
    cluster.start()
    try:
        assert cluster.state.phase is Phase.ZOOKEEPER and cluster.state.fence_version is None
        kafka_znodes.register_broker(raw_zk, 0)
        eventually(lambda: cluster.state.phase is Phase.UNKNOWN)
        assert "/controller_epoch is missing" in cluster.state.reason
        with pytest.raises(ClusterMigrating):
            ZkTokenStore(connection).create(_token("NoEpochTokenAAAAAAAAAA"))
        assert raw_zk.exists(TokenZNode.path("NoEpochTokenAAAAAAAAAA")) is None
        kafka_znodes.elect_zookeeper_controller(raw_zk, 0)
        eventually(lambda: cluster.state.phase is Phase.ZOOKEEPER)
        ZkTokenStore(connection).create(_token("EpochTokenAAAAAAAAAAAA"))
        assert raw_zk.exists(TokenZNode.path("EpochTokenAAAAAAAAAAAA"))
    finally:
        cluster.stop()
        connection.stop()
