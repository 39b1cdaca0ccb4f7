"""The dual-write bridge on a real ZooKeeper, with a real SQLite audit log and the migration's znodes written as
Kafka 3.9 writes them (tests/kafka_znodes.py): a token znode the "KRaft controller" creates, changes or deletes
without a notification gets exactly one, audited as ``token.bridge``; a change that has one (kts's own before the
claim, a broker's) gets none, nor does anything before the claim or once no broker is left in ZooKeeper mode; a
new leader does not notify again what the last one bridged."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from sqlalchemy import Engine

from app.domain.audit import EventQuery
from app.domain.clock import SystemClock
from app.domain.cluster_migration import Phase
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.service.audit import Auditor
from app.storage.audit import migrations
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.zk.cluster_watch import ClusterWatch
from app.storage.zk.connection import ZkConnection
from app.storage.zk.intent_store import ZkIntentStore
from app.storage.zk.token_bridge import TokenBridge
from app.storage.zk.token_changes import ZkTokenChanges
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests import kafka_znodes
from tests.api.helpers import eventually

ALICE = KafkaPrincipal.user("alice")
HOUR = 3_600_000


def _token(token_id: str, renewed: int = 0) -> TokenInformation:
    now = time.time_ns() // 1_000_000
    return TokenInformation(token_id, ALICE, ALICE, (), now, now + HOUR + renewed, now + 24 * HOUR)


def _named(raw_zk: KazooClient) -> list[str]:
    """The token id of every notification, in creation order."""
    names = sorted(raw_zk.get_children(TokenChangeZNode.ROOT))
    return [raw_zk.get(f"{TokenChangeZNode.ROOT}/{name}")[0].decode() for name in names]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    audit_engine = make_engine(f"sqlite:///{tmp_path / 'audit.db'}")
    migrations.upgrade(audit_engine)
    yield audit_engine
    audit_engine.dispose()


@pytest.fixture
def zk(zk_connect: str, raw_zk: KazooClient) -> Iterator[ZkConnection]:
    kafka_znodes.register_broker(raw_zk, 0)
    kafka_znodes.register_broker(raw_zk, 1)
    kafka_znodes.elect_zookeeper_controller(raw_zk, 0)
    connection = ZkConnection(zk_connect, session_timeout_ms=6000, require_cluster=True)
    connection.start()
    yield connection
    connection.stop()


@pytest.fixture
def cluster(zk: ZkConnection) -> Iterator[ClusterWatch]:
    watch = ClusterWatch(zk)
    zk.write_fence = watch
    watch.start()
    yield watch
    watch.stop()


class Leader:
    """One replica's bridge as the elected leader runs it, with its own reader of the znodes."""

    def __init__(self, zk: ZkConnection, cluster: ClusterWatch, engine: Engine) -> None:
        self.audit_log = SqlAuditLog(engine, service_id="svc-a", clock=SystemClock())
        self.bridge = TokenBridge(
            ZkTokenChanges(zk),
            lambda: cluster.state,
            auditor=Auditor(self.audit_log, ZkIntentStore(zk)),
            clock=SystemClock(),
            idle_check_s=0.2,
        )

    def events(self) -> list[tuple[str | None, dict[str, object]]]:
        stored = self.audit_log.query(EventQuery(action="token.bridge"))
        return sorted(((event.token_id, event.details) for event in stored), key=repr)


def _bridge_until(leader: Leader, total: int) -> None:
    """Look until the bridge has written ``total`` notifications in all (a look reads what the watches marked, and
    a watch's callback may run an instant after the change), then once more: nothing else is due."""
    eventually(lambda: leader.bridge.bridge() >= 0 and leader.bridge.notifications_total >= total)
    assert leader.bridge.bridge() == 0
    assert leader.bridge.notifications_total == total


def _claim(raw_zk: KazooClient, cluster: ClusterWatch) -> None:
    kafka_znodes.provision_kraft_quorum(raw_zk)
    kafka_znodes.claim_for_kraft(raw_zk)
    eventually(lambda: cluster.state.phase is Phase.MIGRATING)


def test_each_controller_change_gets_one_notification_and_no_other_change_gets_any(
    zk: ZkConnection, cluster: ClusterWatch, raw_zk: KazooClient, engine: Engine
) -> None:
    ZkTokenStore(zk).create(_token("KtsBeforeClaimAAAAAAAA"))  # kts's own, notified in its transaction
    leader = Leader(zk, cluster, engine)
    assert leader.bridge.bridge() == 0  # ZooKeeper mode: nothing to bridge
    _claim(raw_zk, cluster)
    assert leader.bridge.bridge() == 0  # the first look: kts's token has its notification

    # The controller creates a token: one notification, named by its id, and no second at the next looks.
    raw_zk.create(TokenZNode.path("ControllerMadeAAAAAAAAA"), TokenZNode.encode(_token("ControllerMadeAAAAAAAAA")))
    _bridge_until(leader, 1)
    assert _named(raw_zk) == ["KtsBeforeClaimAAAAAAAA", "ControllerMadeAAAAAAAAA"]

    # It renews kts's pre-claim token (a set-or-create), then deletes its own: one notification each.
    raw_zk.set(TokenZNode.path("KtsBeforeClaimAAAAAAAA"), TokenZNode.encode(_token("KtsBeforeClaimAAAAAAAA", 5)))
    raw_zk.delete(TokenZNode.path("ControllerMadeAAAAAAAAA"))
    _bridge_until(leader, 3)

    # A broker still in ZooKeeper mode writes a token with its notification: nothing to add.
    transaction = raw_zk.transaction()
    transaction.create(TokenZNode.path("BrokerMadeAAAAAAAAAAAA"), TokenZNode.encode(_token("BrokerMadeAAAAAAAAAAAA")))
    transaction.create(TokenChangeZNode.PREFIX, b"BrokerMadeAAAAAAAAAAAA", sequence=True)
    transaction.commit()
    time.sleep(1)  # the watch's callback has run: the look below reads the broker's token
    _bridge_until(leader, 3)
    assert _named(raw_zk) == [
        "KtsBeforeClaimAAAAAAAA",
        "ControllerMadeAAAAAAAAA",
        "KtsBeforeClaimAAAAAAAA",
        "ControllerMadeAAAAAAAAA",
        "BrokerMadeAAAAAAAAAAAA",
    ]
    assert leader.events() == [
        ("ControllerMadeAAAAAAAAA", {"change": "deleted"}),
        ("ControllerMadeAAAAAAAAA", {"change": "written"}),
        ("KtsBeforeClaimAAAAAAAA", {"change": "written"}),
    ]

    # A new leader (another replica, after a failover) finds every change covered.
    successor = Leader(zk, cluster, engine)
    assert successor.bridge.bridge() == 0
    assert len(_named(raw_zk)) == 5


def test_the_running_bridge_follows_the_controller_at_once_and_stops_when_the_last_broker_leaves(
    zk: ZkConnection, cluster: ClusterWatch, raw_zk: KazooClient, engine: Engine
) -> None:
    leader = Leader(zk, cluster, engine)
    lost = threading.Event()
    runner = threading.Thread(target=leader.bridge.run, args=(lost,), daemon=True)
    runner.start()
    try:
        _claim(raw_zk, cluster)
        raw_zk.create(TokenZNode.path("WhileRunningAAAAAAAAAA"), TokenZNode.encode(_token("WhileRunningAAAAAAAAAA")))
        seconds = eventually(lambda: _named(raw_zk) == ["WhileRunningAAAAAAAAAA"])
        print(f"controller's create to its bridged notification: {seconds:.2f} s")
        raw_zk.delete(TokenZNode.path("WhileRunningAAAAAAAAAA"))
        eventually(lambda: _named(raw_zk) == ["WhileRunningAAAAAAAAAA"] * 2)

        # Every broker restarted as a KRaft broker: the migration is over for ZooKeeper, the bridge stops.
        raw_zk.delete("/brokers/ids/0")
        raw_zk.delete("/brokers/ids/1")
        eventually(lambda: cluster.state.phase is Phase.MIGRATED)
        eventually(lambda: not leader.bridge.active)
        raw_zk.create(TokenZNode.path("AfterTheLastBrokerAAAA"), TokenZNode.encode(_token("AfterTheLastBrokerAAAA")))
        time.sleep(2)  # ten idle checks of the bridge: none may write
        assert _named(raw_zk) == ["WhileRunningAAAAAAAAAA"] * 2
    finally:
        lost.set()
        runner.join(timeout=10)
    assert leader.events() == [
        ("WhileRunningAAAAAAAAAA", {"change": "deleted"}),
        ("WhileRunningAAAAAAAAAA", {"change": "written"}),
    ]


def test_the_controllers_rewrite_of_every_token_at_its_claim_costs_no_notification(
    zk: ZkConnection, cluster: ClusterWatch, raw_zk: KazooClient, engine: Engine
) -> None:
    """Looked at in pre-migration, the tokens are known as the brokers have them; the controller's first sync
    rewrites each znode (as a KRaft 3.9 controller does, in its own key order), which changes nothing brokers see."""
    store = ZkTokenStore(zk)
    tokens = [_token(f"BeforeTheClaim{index:02d}AAAAAAA") for index in range(20)]
    for token in tokens:
        store.create(token)
    kafka_znodes.provision_kraft_quorum(raw_zk)
    eventually(lambda: cluster.state.phase is Phase.PRE_MIGRATION)
    leader = Leader(zk, cluster, engine)
    leader.bridge.observe()
    notifications = len(_named(raw_zk))
    kafka_znodes.claim_for_kraft(raw_zk)
    eventually(lambda: cluster.state.phase is Phase.MIGRATING)
    for token in tokens:
        data = json.loads(raw_zk.get(TokenZNode.path(token.token_id))[0])
        raw_zk.set(TokenZNode.path(token.token_id), json.dumps(dict(sorted(data.items()))).encode())
    time.sleep(1)  # the watches' callbacks have run
    assert leader.bridge.bridge() == 0
    assert len(_named(raw_zk)) == notifications
    # A real change among them is announced.
    raw_zk.set(TokenZNode.path(tokens[3].token_id), TokenZNode.encode(replace(tokens[3], renewers=(ALICE,))))
    _bridge_until(leader, 1)
    assert _named(raw_zk)[notifications:] == [tokens[3].token_id]


def test_nothing_is_bridged_before_the_controller_claims_the_cluster(
    zk: ZkConnection, cluster: ClusterWatch, raw_zk: KazooClient, engine: Engine
) -> None:
    """Pre-migration: ZooKeeper brokers still own the metadata; a token znode without a notification (a broker that
    died between its two writes) is not the bridge's to announce."""
    kafka_znodes.provision_kraft_quorum(raw_zk)
    eventually(lambda: cluster.state.phase is Phase.PRE_MIGRATION)
    raw_zk.create(TokenZNode.path("PreMigrationAAAAAAAAAA"), TokenZNode.encode(_token("PreMigrationAAAAAAAAAA")))
    leader = Leader(zk, cluster, engine)
    lost = threading.Event()
    runner = threading.Thread(target=leader.bridge.run, args=(lost,), daemon=True)
    runner.start()
    time.sleep(1)
    lost.set()
    runner.join(timeout=10)
    assert _named(raw_zk) == []
    assert leader.events() == []
