"""The migration phase and the write decision, from what ZooKeeper shows (app/domain/cluster_migration.py)."""

from __future__ import annotations

import pytest

from app.domain.cluster_migration import (
    ClusterView,
    ControllerRegistration,
    MigrationRecord,
    Phase,
    judge,
)
from app.domain.errors import ClusterMigrating

ZK_CONTROLLER = ControllerRegistration(node_id=0, kraft_controller_epoch=-1)  # Kafka 3.4+ ZooKeeper controller
OLD_ZK_CONTROLLER = ControllerRegistration(node_id=2, kraft_controller_epoch=None)  # version 1, before 3.4
KRAFT_CONTROLLER = ControllerRegistration(node_id=3000, kraft_controller_epoch=1)
WAITING = MigrationRecord(-1, -1, -1, -1)  # as the KRaft controller creates /migration at start
COPIED = MigrationRecord(3000, 1, 42, 1)


def view(
    controller: ControllerRegistration | None = ZK_CONTROLLER,
    migration: MigrationRecord | None = None,
    brokers: int = 1,
    epoch_version: int | None = 3,
    unreadable: tuple[str, ...] = (),
) -> ClusterView:
    return ClusterView(epoch_version, controller, migration, brokers, "cluster-id", unreadable)


@pytest.mark.parametrize("controller", [ZK_CONTROLLER, OLD_ZK_CONTROLLER, None])
def test_zookeeper_mode_allows_writes_fenced_by_the_controller_epoch_version(
    controller: ControllerRegistration | None,
) -> None:
    state = judge(view(controller))
    assert state.phase is Phase.ZOOKEEPER
    assert state.writes_allowed
    assert state.fence_version == 3


def test_no_controller_ever_elected_leaves_nothing_to_check() -> None:
    state = judge(view(None, epoch_version=None, brokers=0))
    assert state.writes_allowed
    assert state.fence_version is None


@pytest.mark.parametrize("migration", [None, WAITING])
def test_brokers_without_a_controller_epoch_refuse_writes(migration: MigrationRecord | None) -> None:
    """Every controller election writes /controller_epoch: brokers without it leave the fence nothing to check."""
    state = judge(view(ZK_CONTROLLER, migration, brokers=2, epoch_version=None))
    assert state.phase is Phase.UNKNOWN
    assert not state.writes_allowed
    assert state.reason.startswith("2 brokers are registered in /brokers/ids but /controller_epoch is missing")
    assert "/controller_epoch is missing" in state.refusal().message
    one = judge(view(None, brokers=1, epoch_version=None))
    assert one.reason.startswith("1 broker is registered") and not one.writes_allowed


def test_a_kraft_quorum_waiting_for_the_brokers_still_allows_writes() -> None:
    # The controller copies every znode only after it claims the cluster, which the fence guards.
    state = judge(view(ZK_CONTROLLER, WAITING))
    assert state.phase is Phase.PRE_MIGRATION
    assert state.writes_allowed
    assert state.fence_version == 3
    assert "bootstrap.servers" in state.reason
    assert state.reason.startswith("A KRaft controller is provisioned")
    named = judge(view(ZK_CONTROLLER, MigrationRecord(3000, 1, -1, -1)))
    assert named.reason.startswith("KRaft controller 3000 is provisioned")


@pytest.mark.parametrize("migration", [None, WAITING, COPIED])
def test_a_kraft_controller_in_controller_refuses_writes(migration: MigrationRecord | None) -> None:
    state = judge(view(KRAFT_CONTROLLER, migration, brokers=2))
    assert state.phase is Phase.MIGRATING
    assert not state.writes_allowed
    assert state.fence_version is None
    assert "KRaft controller 3000 (epoch 1)" in state.reason
    assert "2 brokers still in ZooKeeper mode" in state.reason


def test_migrated_once_no_broker_is_left_in_zookeeper() -> None:
    state = judge(view(KRAFT_CONTROLLER, COPIED, brokers=0))
    assert state.phase is Phase.MIGRATED
    assert not state.writes_allowed
    assert "copied up to KRaft offset 42" in state.reason


@pytest.mark.parametrize("controller", [ZK_CONTROLLER, None])
def test_a_finished_copy_refuses_writes_even_when_a_zookeeper_broker_holds_controller(
    controller: ControllerRegistration | None,
) -> None:
    # A revert that removed /controller but not /migration: the KRaft log may still be the truth.
    state = judge(view(controller, COPIED))
    assert state.phase is Phase.MIGRATING
    assert not state.writes_allowed


def test_a_kraft_epoch_of_zero_counts_as_kraft() -> None:
    assert ControllerRegistration(3000, 0).is_kraft
    assert not ControllerRegistration(0, -1).is_kraft
    assert not ControllerRegistration(0, None).is_kraft


def test_unreadable_znodes_refuse_writes_and_are_named() -> None:
    state = judge(view(None, unreadable=("/controller",)))
    assert state.phase is Phase.UNKNOWN
    assert not state.writes_allowed
    assert "/controller" in state.reason


def test_the_refusal_tells_the_operator_what_to_do() -> None:
    refusal = judge(view(KRAFT_CONTROLLER)).refusal()
    assert isinstance(refusal, ClusterMigrating)
    assert refusal.name == "CLUSTER_MIGRATING"
    assert refusal.retry_after_s > 0
    assert "bootstrap.servers" in refusal.message
    assert "migrating" in refusal.message
