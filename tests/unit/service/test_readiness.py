"""The readiness view: each dependency's state in a few words, from probes only."""

from __future__ import annotations

import pytest

from app.domain.authorization import Caller, SuperUsersOnly
from app.domain.cluster_migration import ClusterState, ClusterView, ControllerRegistration, Phase
from app.domain.errors import ClusterAuthorizationFailed
from app.domain.principal import KafkaPrincipal
from app.service.readiness import OK, ClusterStatus, Readiness, readiness_report
from tests.unit.fakes import FakeAuditLog


def all_ok(**options: object) -> Readiness:
    return Readiness(lambda: True, lambda: True, lambda: True, FakeAuditLog(), "zookeeper", **options)  # type: ignore[arg-type]


def test_every_dependency_ok() -> None:
    readiness = Readiness(lambda: True, lambda: True, lambda: True, FakeAuditLog(), "zookeeper")
    assert readiness.checks() == {"cluster": OK, "tokens": OK, "acls": OK, "audit_database": OK}


def test_each_failing_dependency_says_what_is_wrong() -> None:
    log = FakeAuditLog()
    log.down = True
    readiness = Readiness(lambda: False, lambda: False, lambda: False, log, "zookeeper")
    assert readiness.checks() == {
        "cluster": "zookeeper connection lost (reads are served from the caches; writes are refused)",
        "tokens": "not loaded",
        "acls": "not loaded",
        "audit_database": "unreachable",
    }


def test_the_probes_are_read_at_each_check() -> None:
    connected = [False]
    readiness = Readiness(lambda: connected[0], lambda: True, lambda: True, FakeAuditLog(), "zookeeper")
    assert readiness.checks()["cluster"] != OK
    connected[0] = True
    assert readiness.checks()["cluster"] == OK


def test_the_report_is_a_status_and_a_reason_word() -> None:
    ready = readiness_report(all_ok())
    assert (ready.status, ready.reason, ready.ready) == ("ready", "ok", True)
    log = FakeAuditLog()
    log.down = True
    down = readiness_report(Readiness(lambda: True, lambda: False, lambda: True, log, "zookeeper"))
    assert (down.status, down.reason, down.ready) == ("not-ready", "tokens", False)  # the first failing part
    assert down.failing == ["tokens: not loaded", "audit_database: unreachable"]
    view = ClusterView(2, ControllerRegistration(3000, 1), None, 1, "id")
    migrating = ClusterState(Phase.MIGRATING, "a KRaft controller owns the metadata", view)
    read_only = readiness_report(all_ok(cluster=lambda: migrating))
    assert (read_only.status, read_only.reason, read_only.ready) == ("read-only", "migrating", True)
    assert read_only.cluster is migrating


def test_the_cluster_status_needs_describe_on_the_cluster() -> None:
    admin, alice = KafkaPrincipal.user("admin"), KafkaPrincipal.user("alice")
    status = ClusterStatus(all_ok(), authorizer=SuperUsersOnly([admin]))
    assert status.report(Caller(admin)).checks["cluster"] == OK
    with pytest.raises(ClusterAuthorizationFailed) as refused:
        status.report(Caller(alice))
    assert refused.value.message == (
        "User:alice may not read the cluster's status (needs Describe on Cluster:kafka-cluster)."
    )
