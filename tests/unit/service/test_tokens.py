"""TokenService's decisions over in-memory ports: who may create, renew, expire and see which token, what
each refusal answers, and the audit records each action leaves (docs/kafka-compatibility.md, "Semantics of
the token operations")."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, Outcome
from app.domain.authorization import Caller
from app.domain.errors import (
    InvalidPrincipalType,
    StoreUnavailable,
    TokenAuthorizationFailed,
    TokenExpired,
    TokenNotFound,
    TokenOwnerMismatch,
    TokenRequestNotAllowed,
)
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_rules import CreateRequest
from app.service.ports import StoredToken
from tests.unit.fakes import (
    NOW,
)
from tests.unit.service.token_harness import ADMIN, ALICE, BOB, DAY, SECRET, WEEK, TokenHarness

CAROL = KafkaPrincipal.user("carol")


Setup = TokenHarness  # ADMIN is a super user


def login(principal: KafkaPrincipal) -> Caller:
    return Caller(principal, host="192.0.2.1")


def by_token(principal: KafkaPrincipal) -> Caller:
    return Caller(principal, host="192.0.2.1", token_id="SomeToken")


@pytest.fixture
def setup() -> Setup:
    return Setup()


def request(owner: KafkaPrincipal | None = None, *renewers: KafkaPrincipal, max_lifetime_ms: int = -1) -> CreateRequest:
    return CreateRequest(owner=owner, renewers=tuple(renewers), max_lifetime_ms=max_lifetime_ms)


# -------------------- create


def test_a_caller_creates_a_token_for_itself(setup: Setup) -> None:
    issued = setup.service.create(login(ALICE), request(None, BOB))

    token = issued.token
    assert (token.owner, token.token_requester, token.renewers) == (ALICE, ALICE, (BOB,))
    assert (token.issue_timestamp, token.expiry_timestamp, token.max_timestamp) == (NOW, NOW + DAY, NOW + WEEK)
    assert issued.hmac == SECRET.hmac(token.token_id)
    assert setup.store.created == [(token.token_id, 1)]  # the change carries its intent
    assert setup.view.get(token.token_id) is not None  # this replica reads its own write at once
    (pending,) = setup.log.appended.values()
    assert (pending.action, pending.outcome, pending.token_id) == (Action.TOKEN_CREATE, Outcome.PENDING, token.token_id)
    assert pending.details == {"requestedMaxLifetimeMs": -1, "renewers": ["User:bob"]}
    (done,) = setup.events()
    assert done.outcome is Outcome.SUCCEEDED
    assert (done.principal, done.owner, done.token_requester) == ("User:alice", "User:alice", "User:alice")
    assert done.details["expiryTimestamp"] == NOW + DAY and done.details["maxTimestamp"] == NOW + WEEK
    assert setup.intents.cleared == [1]


def test_a_requested_lifetime_shortens_the_token_but_never_lengthens_it(setup: Setup) -> None:
    assert setup.service.create(login(ALICE), request(max_lifetime_ms=1_000)).token.max_timestamp == NOW + 1_000
    assert setup.service.create(login(ALICE), request(max_lifetime_ms=2 * WEEK)).token.max_timestamp == NOW + WEEK


def test_creating_for_another_user_needs_create_tokens_on_that_user(setup: Setup) -> None:
    with pytest.raises(TokenAuthorizationFailed, match="User:alice may not create tokens for User:carol"):
        setup.service.create(login(ALICE), request(CAROL))

    assert setup.store.tokens == {}
    (refused,) = setup.events()
    assert (refused.action, refused.outcome, refused.error_code) == (Action.TOKEN_CREATE, Outcome.DENIED, 65)
    assert (refused.principal, refused.owner) == ("User:alice", "User:carol")
    assert setup.log.completed == {}  # refused before anything was pending


def test_with_create_tokens_on_that_user_the_token_is_theirs(setup: Setup) -> None:
    setup.grant(ALICE, "CreateTokens", "User", "User:carol")

    token = setup.service.create(login(ALICE), request(CAROL)).token

    assert (token.owner, token.token_requester) == (CAROL, ALICE)
    assert setup.events()[-1].owner == "User:carol"


def test_a_super_user_creates_for_anyone(setup: Setup) -> None:
    assert setup.service.create(login(ADMIN), request(CAROL)).token.owner == CAROL


def test_a_token_authenticated_caller_may_not_create_tokens(setup: Setup) -> None:
    with pytest.raises(TokenRequestNotAllowed):
        setup.service.create(by_token(ADMIN), request())
    assert setup.store.tokens == {}
    assert [(e.outcome, e.error_code) for e in setup.events()] == [(Outcome.DENIED, 64)]


def test_owners_and_renewers_must_be_users(setup: Setup) -> None:
    with pytest.raises(InvalidPrincipalType):
        setup.service.create(login(ADMIN), request(KafkaPrincipal("Group", "g")))
    with pytest.raises(InvalidPrincipalType):
        setup.service.create(login(ALICE), request(None, KafkaPrincipal("Group", "g")))
    assert setup.store.tokens == {}


def test_an_audit_outage_refuses_the_create_and_writes_nothing(setup: Setup) -> None:
    setup.log.down = True
    with pytest.raises(StoreUnavailable):
        setup.service.create(login(ALICE), request())
    assert setup.store.tokens == {}


# -------------------- renew and expire


@pytest.mark.parametrize("caller", [ALICE, BOB, ADMIN], ids=["owner", "renewer", "super user"])
def test_owner_renewer_and_super_user_renew(setup: Setup, caller: KafkaPrincipal) -> None:
    setup.token("T1")
    setup.clock.advance(1_000)

    change = setup.service.renew(login(caller), "T1", 5_000)

    assert (change.token_id, change.expiry_timestamp) == ("T1", NOW + 6_000)
    assert setup.store.tokens["T1"].token.expiry_timestamp == NOW + 6_000
    assert setup.store.updated == [("T1", 0, 1)]
    (done,) = setup.events()
    assert (done.action, done.outcome, done.principal) == (Action.TOKEN_RENEW, Outcome.SUCCEEDED, str(caller))
    assert (done.owner, done.details["expiryTimestamp"]) == ("User:alice", NOW + 6_000)


def test_a_renewal_never_passes_the_maximum_and_a_negative_period_means_the_default(setup: Setup) -> None:
    setup.token("T1", max_ts=NOW + 10_000)
    assert setup.service.renew(login(ALICE), "T1", WEEK).expiry_timestamp == NOW + 10_000
    setup.token("T2")
    assert setup.service.renew(login(ALICE), "T2", -1).expiry_timestamp == NOW + DAY


def test_a_stranger_cannot_even_see_the_token_it_would_renew(setup: Setup) -> None:
    setup.token("T1")
    with pytest.raises(TokenNotFound, match="does not exist or is not visible to User:carol"):
        setup.service.renew(login(CAROL), "T1", 5_000)
    assert setup.store.updated == []
    assert [(e.action, e.outcome, e.error_code) for e in setup.events()] == [(Action.TOKEN_RENEW, Outcome.DENIED, 62)]


def test_seeing_a_token_is_not_enough_to_renew_it(setup: Setup) -> None:
    setup.token("T1")
    setup.grant(CAROL, "Describe", "DelegationToken", "T1")
    with pytest.raises(TokenOwnerMismatch):
        setup.service.renew(login(CAROL), "T1", 5_000)
    with pytest.raises(TokenOwnerMismatch):
        setup.service.expire(login(CAROL), "T1", 5_000)
    assert setup.store.tokens["T1"].version == 0
    assert [e.error_code for e in setup.events()] == [63, 63]


def test_an_expired_token_cannot_be_renewed(setup: Setup) -> None:
    setup.token("T1", expiry=NOW - 1)
    with pytest.raises(TokenExpired):
        setup.service.renew(login(ALICE), "T1", 5_000)
    assert setup.events()[-1].error_code == 66


@pytest.mark.parametrize("change", ["renew", "expire"])
def test_a_token_authenticated_caller_may_not_renew_or_expire(setup: Setup, change: str) -> None:
    setup.token("T1")
    with pytest.raises(TokenRequestNotAllowed):
        getattr(setup.service, change)(by_token(ALICE), "T1", 5_000)
    assert setup.store.tokens["T1"].version == 0
    assert [e.error_code for e in setup.events()] == [64]


def test_expiring_with_a_period_moves_the_expiry(setup: Setup) -> None:
    setup.token("T1")
    change = setup.service.expire(login(BOB), "T1", 5_000)
    assert change.expiry_timestamp == NOW + 5_000
    assert setup.store.tokens["T1"].token.expiry_timestamp == NOW + 5_000
    done = setup.events()[-1]
    assert (done.action, done.outcome, done.details["deleted"]) == (Action.TOKEN_EXPIRE, Outcome.SUCCEEDED, False)


def test_expiring_with_a_negative_period_deletes_the_token(setup: Setup) -> None:
    setup.token("T1")
    change = setup.service.expire(login(ALICE), "T1", -1)
    assert change.expiry_timestamp == NOW
    assert "T1" not in setup.store.tokens and setup.view.get("T1") is None
    assert setup.store.deleted == [("T1", 0, 1)]
    assert setup.events()[-1].details["deleted"] is True


def test_renew_and_expire_by_hmac_find_the_token(setup: Setup) -> None:
    setup.token("T1")
    assert setup.service.renew_by_hmac(login(BOB), SECRET.hmac("T1"), 5_000).token_id == "T1"
    assert setup.service.expire_by_hmac(login(ALICE), SECRET.hmac("T1"), -1).token_id == "T1"
    assert "T1" not in setup.store.tokens
    assert [e.token_id for e in setup.events()] == ["T1", "T1"]


def test_an_unknown_hmac_is_token_not_found_and_audited_without_a_token_id(setup: Setup) -> None:
    setup.token("T1")
    with pytest.raises(TokenNotFound, match="No token has this HMAC"):
        setup.service.renew_by_hmac(login(ALICE), SECRET.hmac("Other"), 5_000)
    assert setup.view.catch_ups == 1  # it looked for a token made elsewhere an instant ago
    (refused,) = setup.events()
    assert (refused.token_id, refused.error_code) == (None, 62)


def test_a_renew_that_loses_a_race_reads_again_and_decides_on_the_new_version(setup: Setup) -> None:
    setup.token("T1")

    def another_replica_renews_first(token_id: str) -> None:
        setup.store.after_get = None
        setup.store.renew(token_id, NOW + 2 * DAY)

    setup.store.after_get = another_replica_renews_first
    change = setup.service.renew(login(ALICE), "T1", 5_000)

    assert change.expiry_timestamp == NOW + 5_000
    assert setup.store.tokens["T1"].version == 2  # written over the concurrent version
    assert [e.outcome for e in setup.events()] == [Outcome.SUCCEEDED]


# -------------------- describe and get


def test_describe_shows_each_caller_only_what_it_may_see(setup: Setup) -> None:
    setup.token("A-own", ALICE, renewers=())
    setup.token("B-renews", CAROL, renewers=(BOB,))
    setup.token("C-requested", CAROL, renewers=(), requester=BOB)
    setup.token("D-other", CAROL, renewers=())

    def ids(caller: KafkaPrincipal, owners: list[KafkaPrincipal] | None = None) -> list[str]:
        page = setup.service.describe(login(caller), owners, limit=100, after=None)
        return [token.token_id for token in page.tokens]

    assert ids(ALICE) == ["A-own"]
    assert ids(BOB) == ["B-renews", "C-requested"]
    assert ids(ADMIN) == ["A-own", "B-renews", "C-requested", "D-other"]
    assert ids(ADMIN, [ALICE]) == ["A-own"]
    setup.grant(ALICE, "DescribeTokens", "User", "User:carol")
    assert ids(ALICE) == ["A-own", "B-renews", "C-requested", "D-other"]


def test_describe_is_audited_with_the_filter_and_the_count(setup: Setup) -> None:
    setup.token("T1")
    setup.service.describe(login(ALICE), [ALICE], limit=10, after=None)
    (event,) = setup.events()
    assert (event.action, event.outcome) == (Action.TOKEN_DESCRIBE, Outcome.SUCCEEDED)
    assert event.details == {"owners": ["User:alice"], "returned": 1}


def test_describe_pages_by_token_id(setup: Setup) -> None:
    for token_id in ("T1", "T2", "T3"):
        setup.token(token_id)
    first = setup.service.describe(login(ALICE), None, limit=2, after=None)
    assert ([t.token_id for t in first.tokens], first.next_after) == (["T1", "T2"], "T2")
    second = setup.service.describe(login(ALICE), None, limit=2, after=first.next_after)
    assert ([t.token_id for t in second.tokens], second.next_after) == (["T3"], None)


def test_get_hides_tokens_the_caller_may_not_see(setup: Setup) -> None:
    setup.token("T1")
    assert setup.service.get(login(BOB), "T1").token_id == "T1"
    with pytest.raises(TokenNotFound):
        setup.service.get(login(CAROL), "T1")
    assert [(e.outcome, e.error_code) for e in setup.events()] == [(Outcome.SUCCEEDED, None), (Outcome.DENIED, 62)]


def test_get_finds_a_token_made_on_another_replica_an_instant_ago(setup: Setup) -> None:
    token = TokenInformation("Fresh", ALICE, ALICE, (), NOW, NOW + DAY, NOW + WEEK)
    setup.store.tokens["Fresh"] = StoredToken(token, 0)  # in ZooKeeper, not yet in this replica's cache

    assert setup.service.get(login(ALICE), "Fresh") == token
    assert setup.view.refreshed == ["Fresh"]


# -------------------- verify


def test_verify_accepts_the_hmac_of_a_live_token_only(setup: Setup) -> None:
    setup.token("T1", expiry=NOW + 10)
    assert setup.service.verify("T1", SECRET.hmac("T1")) is not None
    assert setup.service.verify("T1", SECRET.hmac("T2")) is None
    assert setup.service.verify("Unknown", SECRET.hmac("Unknown")) is None
    setup.clock.advance(10)
    assert setup.service.verify("T1", SECRET.hmac("T1")) is None  # from its expiry instant on
    assert setup.events() == []  # the login path: the authenticator audits


def test_verify_for_a_caller_audits_failures_only(setup: Setup) -> None:
    setup.token("T1")
    assert setup.service.verify_for(login(CAROL), "T1", SECRET.hmac("T1")) is not None
    assert setup.service.verify_for(login(CAROL), "T1", SECRET.hmac("nope")) is None
    (event,) = setup.events()
    assert (event.action, event.outcome, event.token_id, event.principal) == (
        Action.TOKEN_VERIFY,
        Outcome.DENIED,
        "T1",
        "User:carol",
    )
