"""TokenService's quota enforcement over in-memory ports: the cache catches up exactly when a quota's guard
moved since this replica last matched it (a create on another replica), a refusal is judged again after
catching up (a token deleted elsewhere), and refusals are audited as denied."""

from __future__ import annotations

import pytest

from app.domain.audit import Outcome
from app.domain.authorization import Caller
from app.domain.errors import TokenQuotaExceeded
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind, TokenQuota
from app.domain.token_rules import CreateRequest
from app.service.ports import CreateTerms
from tests.unit.fakes import NOW
from tests.unit.service.token_harness import ALICE, DAY, TokenHarness

ALICE_QUOTA = QuotaKey(QuotaKind.OWNER, ALICE)
FOR_ONESELF = CreateRequest(owner=None, renewers=(), max_lifetime_ms=-1)


class Replica(TokenHarness):
    def __init__(self, quota: TokenQuota) -> None:
        super().__init__(super_users=(), quota=quota)

    def create(self) -> str:
        return self.service.create(Caller(ALICE), FOR_ONESELF).token.token_id

    def created_elsewhere(self, token_id: str) -> None:
        """Another replica's create for alice: in the store, its guard moved, not yet in this cache."""
        token = TokenInformation(token_id, ALICE, ALICE, (), NOW, NOW + DAY, NOW + 7 * DAY)
        self.store.create(token, CreateTerms(quotas=[ALICE_QUOTA]))


def test_the_cache_catches_up_only_when_the_guard_moved_since_this_replica_matched_it() -> None:
    replica = Replica(TokenQuota(per_owner=3))
    replica.create()
    assert replica.view.catch_ups == 1  # no guard version known yet
    replica.create()
    assert replica.view.catch_ups == 1  # the guard is where this replica's own create left it

    replica.created_elsewhere("MadeElsewhereAAAAAAAAA")  # its notification has not arrived
    with pytest.raises(TokenQuotaExceeded, match="is 3 live tokens and 3 live tokens count against it"):
        replica.create()
    assert replica.store.guards[ALICE_QUOTA] == 2  # three creates counted, the refused one not
    assert len(replica.store.tokens) == 3


def test_a_refusal_is_judged_again_after_catching_up_with_deletions_elsewhere() -> None:
    replica = Replica(TokenQuota(per_owner=2))
    first, _ = replica.create(), replica.create()
    del replica.store.tokens[first]  # expired on another replica: this cache still holds it
    catch_ups = replica.view.catch_ups
    replica.create()
    assert replica.view.catch_ups > catch_ups
    assert len(replica.store.tokens) == 2


def test_refusals_are_audited_as_denied_with_the_error() -> None:
    replica = Replica(TokenQuota(per_owner=1))
    replica.create()
    with pytest.raises(TokenQuotaExceeded):
        replica.create()
    refused = replica.log.events()[-1]
    assert (refused.outcome, refused.details["error"]) == (Outcome.DENIED, "TOKEN_QUOTA_EXCEEDED")
    assert refused.owner == "User:alice"


def test_without_quotas_nothing_is_counted_or_caught_up() -> None:
    replica = Replica(TokenQuota())
    for _ in range(5):
        replica.create()
    assert (replica.view.catch_ups, replica.store.guards) == (0, {})
