"""One TokenService over in-memory ports (tests/unit/fakes.py), shared by the unit tests of the token rules
(test_tokens.py), the quotas (test_token_quotas.py) and the ZooKeeper admission's write shares
(tests/unit/storage/zk/test_token_shares.py). Several harnesses over one ``store`` and ``clock`` are replicas of
one cluster, each with its own cache (``view``) and audit log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.domain.acl import AccessControlEntry, AclAuthorizer, ResourcePattern
from app.domain.audit import AuditEvent
from app.domain.authorization import Authorizer
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import TokenQuota
from app.domain.token_rules import TokenPolicy
from app.domain.token_secret import TokenSecret
from app.service.admission import OPEN_ADMISSION, Admission
from app.service.audit import Auditor
from app.service.ports import StoredToken, TokenView
from app.service.tokens import TokenService
from tests.unit.fakes import (
    NOW,
    FakeAclStore,
    FakeAclView,
    FakeAuditLog,
    FakeClock,
    FakeIntentStore,
    FakeTokenStore,
    FakeTokenView,
)

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
ADMIN = KafkaPrincipal.user("admin")
DAY = 86_400_000
WEEK = 7 * DAY
POLICY = TokenPolicy(max_lifetime_ms=WEEK, default_renew_ms=DAY)
SECRET = TokenSecret("unit-test-secret")

# The admission of a harness, built over its cache, clock and authorizer (default: none).
AdmissionOf = Callable[[TokenView, FakeClock, Authorizer], Admission]


@dataclass
class TokenHarness:
    clock: FakeClock = field(default_factory=FakeClock)
    store: FakeTokenStore = field(default_factory=FakeTokenStore)
    acl_store: FakeAclStore = field(default_factory=FakeAclStore)
    log: FakeAuditLog = field(default_factory=FakeAuditLog)
    intents: FakeIntentStore = field(default_factory=FakeIntentStore)
    super_users: Sequence[KafkaPrincipal] = (ADMIN,)
    policy: TokenPolicy = POLICY
    quota: TokenQuota = field(default_factory=TokenQuota)
    admission_of: AdmissionOf = lambda _view, _clock, _authorizer: OPEN_ADMISSION

    def __post_init__(self) -> None:
        self.view = FakeTokenView(store=self.store, secret=SECRET)
        self.acls = FakeAclView(self.acl_store)
        self.authorizer = AclAuthorizer(list(self.super_users), self.acls.snapshot)
        self.admission = self.admission_of(self.view, self.clock, self.authorizer)
        self.service = TokenService(
            self.store,
            self.view,
            secret=SECRET,
            policy=self.policy,
            authorizer=self.authorizer,
            clock=self.clock,
            auditor=Auditor(self.log, self.intents),
            admission=self.admission,
            quota=self.quota,
        )

    def grant(self, principal: KafkaPrincipal, operation: str, resource_type: str, name: str) -> None:
        pattern = ResourcePattern(resource_type, name)
        entry = AccessControlEntry(str(principal), "*", operation, "Allow")
        self.acl_store.change(pattern, lambda entries: entries | {entry})
        self.acls.reload()

    def token(
        self,
        token_id: str,
        owner: KafkaPrincipal = ALICE,
        *,
        renewers: tuple[KafkaPrincipal, ...] = (BOB,),
        requester: KafkaPrincipal | None = None,
        expiry: int = NOW + DAY,
        max_ts: int = NOW + WEEK,
    ) -> None:
        """A token already stored and cached (made earlier, on this replica or another)."""
        token = TokenInformation(token_id, owner, requester or owner, renewers, NOW - DAY, expiry, max_ts)
        self.store.tokens[token_id] = StoredToken(token, 0)
        self.view.apply(self.store.tokens[token_id])
        self.view.applied.clear()

    def events(self) -> list[AuditEvent]:
        return self.log.events()
