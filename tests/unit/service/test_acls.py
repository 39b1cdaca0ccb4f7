"""AclService over in-memory ports: who may manage ACLs (Alter on the cluster, with a login) and list them
(Describe), validation before any write, and one audited change per resource pattern."""

from __future__ import annotations

import pytest

from app.domain.acl import AccessControlEntry, AclAuthorizer, AclBinding, AclFilter, PatternType, ResourcePattern
from app.domain.audit import Action, Outcome
from app.domain.authorization import Caller
from app.domain.errors import ClusterAuthorizationFailed, InvalidInput
from app.domain.principal import KafkaPrincipal
from app.service.acls import AclService, AddedAcl
from app.service.audit import Auditor
from tests.unit.fakes import FakeAclStore, FakeAclView, FakeAuditLog, FakeIntentStore

ADMIN = KafkaPrincipal.user("admin")
ALICE = KafkaPrincipal.user("alice")
OPERATOR = KafkaPrincipal.user("operator")
CLUSTER = ResourcePattern("Cluster", "kafka-cluster")
JOE = ResourcePattern("User", "User:joe")
ANN = ResourcePattern("User", "User:ann")


def entry(principal: str, operation: str) -> AccessControlEntry:
    return AccessControlEntry(principal, "*", operation, "Allow")


class Setup:
    def __init__(self) -> None:
        self.store = FakeAclStore()
        self.view = FakeAclView(self.store)
        self.log = FakeAuditLog()
        self.intents = FakeIntentStore()
        authorizer = AclAuthorizer([ADMIN], self.view.snapshot)
        self.service = AclService(
            self.store, self.view, authorizer=authorizer, auditor=Auditor(self.log, self.intents), super_users=[ADMIN]
        )

    def seed(self, pattern: ResourcePattern, *entries: AccessControlEntry) -> None:
        self.store.entries[pattern] = self.store.entries.get(pattern, frozenset()) | set(entries)
        self.view.reload()


@pytest.fixture
def setup() -> Setup:
    return Setup()


def test_a_super_user_adds_an_acl_with_an_audited_change_the_replica_reads_at_once(setup: Setup) -> None:
    binding = AclBinding(JOE, entry("User:x", "CreateTokens"))

    assert setup.service.create(Caller(ADMIN), binding) == AddedAcl(binding)  # no warning

    assert setup.store.entries[JOE] == {binding.entry}
    assert setup.store.changes == [(JOE, 1)]
    assert setup.view.refreshed == [JOE] and setup.view.snapshot().bindings() == [binding]
    (event,) = setup.log.events()
    assert (event.action, event.outcome, event.principal) == (Action.ACL_ADD, Outcome.SUCCEEDED, "User:admin")
    assert event.details == {
        "resourceType": "User",
        "resourceName": "User:joe",
        "patternType": "LITERAL",
        "entries": [{"principal": "User:x", "host": "*", "operation": "CreateTokens", "permissionType": "Allow"}],
    }


def test_without_alter_on_the_cluster_the_change_is_refused_and_audited(setup: Setup) -> None:
    with pytest.raises(ClusterAuthorizationFailed) as refused:
        setup.service.create(Caller(ALICE), AclBinding(JOE, entry("User:x", "CreateTokens")))

    assert refused.value.message == "User:alice may not manage ACLs (needs Alter on Cluster:kafka-cluster)."
    assert setup.store.changes == []
    (event,) = setup.log.events()
    assert (event.action, event.outcome, event.error_code) == (Action.ACL_ADD, Outcome.DENIED, 31)


def test_alter_on_the_cluster_lets_a_user_manage_acls(setup: Setup) -> None:
    setup.seed(CLUSTER, entry("User:operator", "Alter"))
    setup.service.create(Caller(OPERATOR), AclBinding(JOE, entry("User:x", "CreateTokens")))
    assert JOE in setup.store.entries


def test_a_token_may_not_change_acls_whatever_it_is_granted(setup: Setup) -> None:
    with pytest.raises(ClusterAuthorizationFailed):
        setup.service.create(Caller(ADMIN, token_id="T1"), AclBinding(JOE, entry("User:x", "CreateTokens")))
    with pytest.raises(ClusterAuthorizationFailed):
        setup.service.delete(Caller(ADMIN, token_id="T1"), AclFilter(resource_type="User"))
    assert setup.store.changes == []
    assert [(e.action, e.error_code) for e in setup.log.events()] == [(Action.ACL_ADD, 31), (Action.ACL_REMOVE, 31)]


def test_listing_needs_describe_and_a_token_may_list(setup: Setup) -> None:
    setup.seed(JOE, entry("User:x", "CreateTokens"))
    setup.seed(CLUSTER, entry("User:operator", "Describe"))
    with pytest.raises(ClusterAuthorizationFailed, match=r"needs Describe on Cluster:kafka-cluster"):
        setup.service.describe(Caller(ALICE), AclFilter())
    listed = setup.service.describe(Caller(OPERATOR, token_id="T1"), AclFilter(resource_type="User"))
    assert listed == [AclBinding(JOE, entry("User:x", "CreateTokens"))]
    assert setup.log.events() == []  # reads of ACLs are not audited


def test_an_acl_kts_would_not_grant_is_refused_before_any_write(setup: Setup) -> None:
    with pytest.raises(InvalidInput):
        setup.service.create(Caller(ADMIN), AclBinding(ResourcePattern("Topic", "t"), entry("User:x", "Read")))
    assert setup.store.changes == [] and setup.log.appended == {}


def test_deleting_every_acl_needs_a_filter(setup: Setup) -> None:
    setup.seed(JOE, entry("User:x", "CreateTokens"))
    with pytest.raises(InvalidInput, match="give at least one filter field"):
        setup.service.delete(Caller(ADMIN), AclFilter())
    assert setup.store.entries[JOE]


def test_delete_makes_one_audited_change_per_pattern_and_returns_what_it_removed(setup: Setup) -> None:
    setup.seed(JOE, entry("User:x", "CreateTokens"), entry("User:y", "CreateTokens"))
    setup.seed(ANN, entry("User:x", "DescribeTokens"))

    deleted = setup.service.delete(Caller(ADMIN), AclFilter(principal="User:x"))

    assert deleted == [
        AclBinding(ANN, entry("User:x", "DescribeTokens")),
        AclBinding(JOE, entry("User:x", "CreateTokens")),
    ]
    assert setup.store.entries == {JOE: {entry("User:y", "CreateTokens")}, ANN: frozenset()}
    assert [pattern for pattern, _ in setup.store.changes] == [ANN, JOE]
    events = setup.log.events()
    assert [(e.action, e.outcome) for e in events] == [(Action.ACL_REMOVE, Outcome.SUCCEEDED)] * 2
    assert [e.details["removed"][0]["operation"] for e in events] == ["DescribeTokens", "CreateTokens"]


def test_an_acl_granting_tokens_for_a_super_user_is_added_with_a_warning(setup: Setup) -> None:
    binding = AclBinding(ResourcePattern("User", "User:", PatternType.PREFIXED), entry("User:x", "CreateTokens"))
    added = setup.service.create(Caller(ADMIN), binding)
    assert added.binding == binding
    assert setup.store.entries[binding.pattern] == {binding.entry}  # allowed all the same
    (warning,) = added.warnings
    assert "User:x" in warning and "super user User:admin" in warning
