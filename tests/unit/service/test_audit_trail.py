"""AuditTrail: reading the trail needs Describe on the cluster; the query reaches the log unchanged."""

from __future__ import annotations

import pytest

from app.domain.acl import AccessControlEntry, AclAuthorizer, ResourcePattern
from app.domain.audit import EventQuery
from app.domain.authorization import Caller
from app.domain.errors import ClusterAuthorizationFailed
from app.domain.principal import KafkaPrincipal
from app.service.audit_trail import AuditTrail
from tests.unit.fakes import FakeAclStore, FakeAclView, FakeAuditLog

AUDITOR = KafkaPrincipal.user("auditor")


@pytest.fixture
def log() -> FakeAuditLog:
    return FakeAuditLog()


@pytest.fixture
def trail(log: FakeAuditLog) -> AuditTrail:
    store = FakeAclStore()
    store.entries[ResourcePattern("Cluster", "kafka-cluster")] = frozenset(
        {AccessControlEntry("User:auditor", "*", "Describe", "Allow")}
    )
    return AuditTrail(log, authorizer=AclAuthorizer([], FakeAclView(store).snapshot))


def test_describe_on_the_cluster_reads_the_trail(trail: AuditTrail, log: FakeAuditLog) -> None:
    query = EventQuery(token_id="T1", limit=11)
    assert trail.events(Caller(AUDITOR, token_id="T9"), query) == []
    assert log.queries == [query]


def test_anyone_else_is_refused_before_the_log_is_read(trail: AuditTrail, log: FakeAuditLog) -> None:
    with pytest.raises(ClusterAuthorizationFailed) as refused:
        trail.events(Caller(KafkaPrincipal.user("alice")), EventQuery())
    assert refused.value.message == (
        "User:alice may not read the audit trail (needs Describe on Cluster:kafka-cluster)."
    )
    assert log.queries == []
