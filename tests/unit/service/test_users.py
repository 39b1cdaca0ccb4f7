"""UserCredentialService over in-memory ports: only a login with Alter on the cluster changes credentials;
the credential written is Kafka's SCRAM form of the password; every change and refusal is audited."""

from __future__ import annotations

import pytest

from app.domain.acl import AccessControlEntry, AclAuthorizer, ResourcePattern
from app.domain.audit import Action, Outcome
from app.domain.authorization import Caller
from app.domain.credentials import Mechanism
from app.domain.errors import ClusterAuthorizationFailed, CredentialNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.scram import password_matches
from app.service.audit import Auditor
from app.service.users import UserCredentialService
from tests.unit.fakes import FakeAclStore, FakeAclView, FakeAuditLog, FakeIntentStore, FakeUserStore

ADMIN = KafkaPrincipal.user("admin")
ALICE = KafkaPrincipal.user("alice")
OPERATOR = KafkaPrincipal.user("operator")
SHA512 = Mechanism.SCRAM_SHA_512


class Setup:
    def __init__(self) -> None:
        self.store = FakeUserStore()
        self.acl_store = FakeAclStore()
        self.acl_store.entries[ResourcePattern("Cluster", "kafka-cluster")] = frozenset(
            {AccessControlEntry("User:operator", "*", "Alter", "Allow")}
        )
        self.log = FakeAuditLog()
        authorizer = AclAuthorizer([ADMIN], FakeAclView(self.acl_store).snapshot)
        self.service = UserCredentialService(
            self.store, authorizer=authorizer, auditor=Auditor(self.log, FakeIntentStore())
        )


@pytest.fixture
def setup() -> Setup:
    return Setup()


@pytest.mark.parametrize("caller", [ADMIN, OPERATOR], ids=["super user", "Alter on the cluster"])
def test_setting_a_password_writes_the_scram_credential_and_audits_it(setup: Setup, caller: KafkaPrincipal) -> None:
    setup.service.set_password(Caller(caller), "bob", SHA512, "bob-pw", 8192)

    credential = setup.store.credentials("bob")[SHA512]
    assert credential.iterations == 8192 and password_matches(SHA512, credential, "bob-pw")
    assert setup.store.intents == [1]
    (event,) = setup.log.events()
    assert (event.action, event.outcome, event.principal, event.owner) == (
        Action.CREDENTIAL_SET,
        Outcome.SUCCEEDED,
        str(caller),
        "User:bob",
    )
    assert event.details == {"user": "bob", "mechanism": "SCRAM-SHA-512", "iterations": 8192}
    assert "bob-pw" not in repr(setup.log.appended)


def test_without_alter_on_the_cluster_credentials_are_not_changed(setup: Setup) -> None:
    with pytest.raises(ClusterAuthorizationFailed) as refused:
        setup.service.set_password(Caller(ALICE), "bob", SHA512, "pw", 4096)
    assert refused.value.message == "User:alice may not change credentials (needs Alter on Cluster:kafka-cluster)."
    assert setup.store.users == {}
    assert [(e.action, e.outcome, e.error_code) for e in setup.log.events()] == [
        (Action.CREDENTIAL_SET, Outcome.DENIED, 31)
    ]


@pytest.mark.parametrize("change", ["set", "delete"])
def test_a_token_authenticated_super_user_may_not_change_credentials(setup: Setup, change: str) -> None:
    caller = Caller(ADMIN, token_id="T1")
    with pytest.raises(ClusterAuthorizationFailed):
        if change == "set":
            setup.service.set_password(caller, "bob", SHA512, "pw", 4096)
        else:
            setup.service.delete(caller, "bob", SHA512)
    assert setup.store.intents == []
    assert [e.error_code for e in setup.log.events()] == [31]


def test_deleting_a_credential_is_audited(setup: Setup) -> None:
    setup.service.set_password(Caller(ADMIN), "bob", SHA512, "pw", 4096)
    setup.service.delete(Caller(ADMIN), "bob", SHA512)
    assert setup.store.credentials("bob") == {}
    assert [(e.action, e.outcome) for e in setup.log.events()][-1] == (Action.CREDENTIAL_DELETE, Outcome.SUCCEEDED)


def test_deleting_a_missing_credential_fails_and_is_recorded_as_failed(setup: Setup) -> None:
    with pytest.raises(CredentialNotFound):
        setup.service.delete(Caller(ADMIN), "nobody", SHA512)
    (event,) = setup.log.events()
    assert (event.action, event.outcome, event.details["error"]) == (
        Action.CREDENTIAL_DELETE,
        Outcome.FAILED,
        "CREDENTIAL_NOT_FOUND",
    )
