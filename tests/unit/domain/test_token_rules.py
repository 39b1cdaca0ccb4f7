"""Kafka's delegation token semantics as the pure rules implement them
(docs/kafka-compatibility.md#semantics-of-the-token-operations).

Every rule of the contract has a test here that fails if the rule is broken. Times are fixed integers:
the rules take ``now`` as an argument and never read a clock.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from app.domain.authorization import Caller, Operation, ResourceType, SuperUsersOnly
from app.domain.errors import (
    InvalidPrincipalType,
    KafkaError,
    TokenAuthorizationFailed,
    TokenExpired,
    TokenOwnerMismatch,
    TokenRequestNotAllowed,
)
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_rules import (
    CreateRequest,
    DeleteToken,
    Page,
    SetExpiry,
    TokenPolicy,
    describe,
    describe_page,
    matches_owner_filter,
    may_describe,
    may_manage,
    may_see_others_tokens,
    paginate,
    plan_create,
    plan_expire,
    plan_renew,
    visible_in_order,
)

SECOND = 1_000
HOUR = 3_600 * SECOND
DAY = 24 * HOUR
NOW = 1_700_000_000_000
MAX_LIFETIME = 7 * DAY
DEFAULT_RENEW = DAY
POLICY = TokenPolicy(max_lifetime_ms=MAX_LIFETIME, default_renew_ms=DEFAULT_RENEW)
LONG_MAX = 2**63 - 1

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
CAROL = KafkaPrincipal.user("carol")
DAVE = KafkaPrincipal.user("dave")
ADMIN = KafkaPrincipal.user("admin")
STRANGER = KafkaPrincipal.user("mallory")
GROUP = KafkaPrincipal("Group", "readers")

Grant = tuple[KafkaPrincipal, Operation, ResourceType, str]
AuthorizeCall = tuple[Caller, Operation, ResourceType, str]


class FakeAuthorizer:
    """Grants exactly the listed (principal, operation, resource type, name) tuples, and everything to
    super users. Records every ``authorize`` call so tests can check what was asked."""

    def __init__(self, grants: Iterable[Grant] = (), super_users: Iterable[KafkaPrincipal] = ()) -> None:
        self.grants = set(grants)
        self.super_users = frozenset(super_users)
        self.calls: list[AuthorizeCall] = []

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self.super_users

    def authorize(self, caller: Caller, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        self.calls.append((caller, operation, resource_type, name))
        if self.is_super_user(caller.principal):
            return True
        return (caller.principal, operation, resource_type, name) in self.grants

    def may_authorize_some(self, caller: Caller, operation: Operation, resource_type: ResourceType) -> bool:
        return self.is_super_user(caller.principal) or any(
            grant[:3] == (caller.principal, operation, resource_type) for grant in self.grants
        )


def deny_all() -> FakeAuthorizer:
    return FakeAuthorizer()


def caller(principal: KafkaPrincipal, *, token_id: str | None = None) -> Caller:
    return Caller(principal, host="127.0.0.9", token_id=token_id)


def token_caller(principal: KafkaPrincipal) -> Caller:
    """A caller who logged in with a delegation token."""
    return caller(principal, token_id="someTokenId0000000000A")


def make_token(
    token_id: str = "tok-a",
    *,
    owner: KafkaPrincipal = ALICE,
    requester: KafkaPrincipal | None = None,
    renewers: tuple[KafkaPrincipal, ...] = (),
    issue: int = NOW - HOUR,
    expiry: int = NOW + DAY,
    max_timestamp: int = NOW + 6 * DAY,
) -> TokenInformation:
    return TokenInformation(
        token_id=token_id,
        owner=owner,
        token_requester=owner if requester is None else requester,
        renewers=renewers,
        issue_timestamp=issue,
        expiry_timestamp=expiry,
        max_timestamp=max_timestamp,
    )


def create(
    who: Caller,
    *,
    owner: KafkaPrincipal | None = None,
    renewers: tuple[KafkaPrincipal, ...] = (),
    lifetime: int = -1,
    authorizer: FakeAuthorizer | None = None,
    now: int = NOW,
    policy: TokenPolicy = POLICY,
) -> TokenInformation:
    return plan_create(
        who,
        CreateRequest(owner=owner, renewers=renewers, max_lifetime_ms=lifetime),
        token_id="newTokenId000000000000A",
        now_ms=now,
        policy=policy,
        authorizer=authorizer if authorizer is not None else deny_all(),
    )


def renew(
    token: TokenInformation,
    who: Caller,
    *,
    period: int = -1,
    now: int = NOW,
    authorizer: FakeAuthorizer | None = None,
) -> int:
    return plan_renew(
        token,
        who,
        renew_period_ms=period,
        now_ms=now,
        policy=POLICY,
        authorizer=authorizer if authorizer is not None else deny_all(),
    )


def expire(
    token: TokenInformation,
    who: Caller,
    *,
    period: int = -1,
    now: int = NOW,
    authorizer: FakeAuthorizer | None = None,
) -> DeleteToken | SetExpiry:
    return plan_expire(
        token,
        who,
        expiry_period_ms=period,
        now_ms=now,
        authorizer=authorizer if authorizer is not None else deny_all(),
    )


def create_tokens_grant(principal: KafkaPrincipal, owner: KafkaPrincipal) -> Grant:
    return (principal, Operation.CREATE_TOKENS, ResourceType.USER, str(owner))


# -------------------- errors


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (TokenOwnerMismatch, 63),
        (TokenRequestNotAllowed, 64),
        (TokenAuthorizationFailed, 65),
        (TokenExpired, 66),
        (InvalidPrincipalType, 67),
    ],
)
def test_error_classes_carry_kafka_codes(error: type[KafkaError], code: int) -> None:
    assert error.code == code


# -------------------- policy


@pytest.mark.parametrize(("max_lifetime", "renew_ms"), [(0, 1), (1, 0), (-1, DAY), (DAY, -5)])
def test_policy_refuses_lifetimes_below_one_ms(max_lifetime: int, renew_ms: int) -> None:
    with pytest.raises(ValueError):
        TokenPolicy(max_lifetime_ms=max_lifetime, default_renew_ms=renew_ms)


# -------------------- create


def test_create_owner_defaults_to_caller() -> None:
    token = create(caller(ALICE))
    assert token.owner == ALICE


def test_create_requester_is_the_caller() -> None:
    token = create(caller(ADMIN), owner=BOB, authorizer=FakeAuthorizer([create_tokens_grant(ADMIN, BOB)]))
    assert token.owner == BOB
    assert token.token_requester == ADMIN


def test_create_requester_is_the_caller_when_owning_own_token() -> None:
    assert create(caller(ALICE)).token_requester == ALICE


def test_create_uses_the_given_token_id() -> None:
    assert create(caller(ALICE)).token_id == "newTokenId000000000000A"


def test_create_refuses_token_authenticated_caller_with_64() -> None:
    with pytest.raises(TokenRequestNotAllowed) as excinfo:
        create(token_caller(ALICE))
    assert excinfo.value.code == 64


def test_create_checks_64_before_65() -> None:
    authorizer = deny_all()
    with pytest.raises(TokenRequestNotAllowed):
        create(token_caller(ALICE), owner=BOB, authorizer=authorizer)


def test_create_checks_64_before_67_for_renewers() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        create(token_caller(ALICE), renewers=(GROUP,))


def test_create_checks_64_before_67_for_owner() -> None:
    authorizer = FakeAuthorizer([create_tokens_grant(ALICE, GROUP)])
    with pytest.raises(TokenRequestNotAllowed):
        create(token_caller(ALICE), owner=GROUP, authorizer=authorizer)


def test_create_refuses_token_authenticated_super_user_with_64() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        create(token_caller(ADMIN), authorizer=FakeAuthorizer(super_users=[ADMIN]))


def test_create_for_other_owner_without_authorization_is_65() -> None:
    with pytest.raises(TokenAuthorizationFailed) as excinfo:
        create(caller(ALICE), owner=BOB)
    assert excinfo.value.code == 65


def test_create_for_other_owner_asks_create_tokens_on_user_resource_named_after_owner() -> None:
    authorizer = FakeAuthorizer([create_tokens_grant(ALICE, BOB)])
    who = caller(ALICE)
    token = create(who, owner=BOB, authorizer=authorizer)
    assert token.owner == BOB
    assert authorizer.calls == [(who, Operation.CREATE_TOKENS, ResourceType.USER, "User:bob")]


def test_create_for_other_owner_with_grant_for_a_different_owner_is_65() -> None:
    authorizer = FakeAuthorizer([create_tokens_grant(ALICE, CAROL)])
    with pytest.raises(TokenAuthorizationFailed):
        create(caller(ALICE), owner=BOB, authorizer=authorizer)


def test_create_for_other_owner_with_a_different_operation_is_65() -> None:
    authorizer = FakeAuthorizer([(ALICE, Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:bob")])
    with pytest.raises(TokenAuthorizationFailed):
        create(caller(ALICE), owner=BOB, authorizer=authorizer)


def test_create_checks_65_before_67_for_renewers() -> None:
    with pytest.raises(TokenAuthorizationFailed):
        create(caller(ALICE), owner=BOB, renewers=(GROUP,))


def test_create_checks_65_before_67_for_owner() -> None:
    with pytest.raises(TokenAuthorizationFailed):
        create(caller(ALICE), owner=GROUP)


def test_create_owner_equal_to_caller_needs_no_authorization() -> None:
    token = create(caller(ALICE), owner=ALICE, authorizer=deny_all())
    assert token.owner == ALICE
    assert token.token_requester == ALICE


def test_create_super_user_may_create_for_other_owner() -> None:
    authorizer = SuperUsersOnly([ADMIN])
    token = plan_create(
        caller(ADMIN),
        CreateRequest(owner=BOB, renewers=(), max_lifetime_ms=-1),
        token_id="x",
        now_ms=NOW,
        policy=POLICY,
        authorizer=authorizer,
    )
    assert (token.owner, token.token_requester) == (BOB, ADMIN)


OPS = KafkaPrincipal.user("ops")


def test_create_for_a_super_user_by_someone_else_is_65_even_with_create_tokens() -> None:
    authorizer = FakeAuthorizer([create_tokens_grant(ALICE, ADMIN), create_tokens_grant(ALICE, BOB)], [ADMIN])
    with pytest.raises(TokenAuthorizationFailed) as excinfo:
        create(caller(ALICE), owner=ADMIN, authorizer=authorizer)
    assert excinfo.value.code == 65
    assert excinfo.value.message == (
        "User:alice may not create tokens for User:admin: only super users may create tokens for a super user."
    )
    assert create(caller(ALICE), owner=BOB, authorizer=authorizer).owner == BOB  # the grant itself works


def test_create_for_a_super_user_without_create_tokens_gets_the_plain_65() -> None:
    with pytest.raises(TokenAuthorizationFailed) as excinfo:
        create(caller(ALICE), owner=ADMIN, authorizer=FakeAuthorizer(super_users=[ADMIN]))
    assert excinfo.value.message == "User:alice may not create tokens for User:admin."  # no hint who is super


def test_create_for_a_super_user_is_allowed_by_the_policy_switch() -> None:
    authorizer = FakeAuthorizer([create_tokens_grant(ALICE, ADMIN)], [ADMIN])
    lenient = TokenPolicy(max_lifetime_ms=MAX_LIFETIME, default_renew_ms=DEFAULT_RENEW, create_for_super_users=True)
    token = create(caller(ALICE), owner=ADMIN, authorizer=authorizer, policy=lenient)
    assert (token.owner, token.token_requester) == (ADMIN, ALICE)


def test_a_super_user_may_create_for_another_super_user_and_for_itself() -> None:
    authorizer = FakeAuthorizer(super_users=[ADMIN, OPS])
    assert create(caller(OPS), owner=ADMIN, authorizer=authorizer).owner == ADMIN
    assert create(caller(ADMIN), authorizer=authorizer).owner == ADMIN
    assert create(caller(ADMIN), owner=ADMIN, authorizer=authorizer).owner == ADMIN


def test_the_super_user_policy_defaults_to_refusing() -> None:
    assert POLICY.create_for_super_users is False


def test_create_refuses_renewer_of_non_user_type_with_67() -> None:
    with pytest.raises(InvalidPrincipalType) as excinfo:
        create(caller(ALICE), renewers=(BOB, GROUP))
    assert excinfo.value.code == 67


def test_create_refuses_owner_of_non_user_type_with_67() -> None:
    authorizer = FakeAuthorizer([create_tokens_grant(ALICE, GROUP)])
    with pytest.raises(InvalidPrincipalType):
        create(caller(ALICE), owner=GROUP, authorizer=authorizer)


def test_create_accepts_user_renewers() -> None:
    assert create(caller(ALICE), renewers=(BOB, CAROL)).renewers == (BOB, CAROL)


def test_create_without_renewers_has_none() -> None:
    assert create(caller(ALICE)).renewers == ()


def test_create_deduplicates_renewers_keeping_first_order() -> None:
    token = create(caller(ALICE), renewers=(CAROL, BOB, CAROL, DAVE, BOB))
    assert token.renewers == (CAROL, BOB, DAVE)


@pytest.mark.parametrize("requested", [0, -1, -DAY, -(2**63)])
def test_create_lifetime_at_most_zero_means_server_maximum(requested: int) -> None:
    token = create(caller(ALICE), lifetime=requested)
    assert token.max_timestamp == NOW + MAX_LIFETIME


@pytest.mark.parametrize("requested", [1, HOUR, 3 * DAY, MAX_LIFETIME - 1])
def test_create_lifetime_below_maximum_is_used_as_requested(requested: int) -> None:
    token = create(caller(ALICE), lifetime=requested)
    assert token.max_timestamp == NOW + requested


def test_create_lifetime_equal_to_maximum_is_the_maximum() -> None:
    assert create(caller(ALICE), lifetime=MAX_LIFETIME).max_timestamp == NOW + MAX_LIFETIME


@pytest.mark.parametrize("requested", [MAX_LIFETIME + 1, 30 * DAY, LONG_MAX])
def test_create_lifetime_above_maximum_is_clamped_not_refused(requested: int) -> None:
    token = create(caller(ALICE), lifetime=requested)
    assert token.max_timestamp == NOW + MAX_LIFETIME


def test_create_max_timestamp_is_now_plus_lifetime() -> None:
    token = create(caller(ALICE), lifetime=2 * DAY, now=NOW + 12_345)
    assert token.max_timestamp == NOW + 12_345 + 2 * DAY


def test_create_issue_timestamp_is_now() -> None:
    assert create(caller(ALICE), now=NOW + 777).issue_timestamp == NOW + 777


def test_create_expiry_is_now_plus_default_renew_when_lifetime_is_longer() -> None:
    token = create(caller(ALICE), lifetime=3 * DAY)
    assert token.expiry_timestamp == NOW + DEFAULT_RENEW
    assert token.expiry_timestamp < token.max_timestamp


def test_create_expiry_is_max_timestamp_when_lifetime_is_shorter_than_default_renew() -> None:
    token = create(caller(ALICE), lifetime=HOUR)
    assert token.expiry_timestamp == token.max_timestamp == NOW + HOUR


def test_create_expiry_with_default_lifetime_uses_default_renew() -> None:
    token = create(caller(ALICE))
    assert token.expiry_timestamp == NOW + DEFAULT_RENEW


def test_create_expiry_when_policy_renew_exceeds_max_lifetime() -> None:
    policy = TokenPolicy(max_lifetime_ms=HOUR, default_renew_ms=DAY)
    token = create(caller(ALICE), policy=policy)
    assert token.max_timestamp == NOW + HOUR
    assert token.expiry_timestamp == NOW + HOUR


# -------------------- renew


def test_renew_refuses_token_authenticated_caller_with_64() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        renew(make_token(owner=ALICE), token_caller(ALICE))


def test_renew_checks_64_before_63() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        renew(make_token(owner=ALICE), token_caller(STRANGER))


def test_renew_checks_64_before_66() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        renew(make_token(owner=ALICE, expiry=NOW - 1), token_caller(ALICE))


def test_renew_by_neither_owner_nor_renewer_is_63() -> None:
    with pytest.raises(TokenOwnerMismatch) as excinfo:
        renew(make_token(owner=ALICE, renewers=(BOB,)), caller(STRANGER))
    assert excinfo.value.code == 63


def test_renew_by_requester_who_is_not_owner_or_renewer_is_63() -> None:
    token = make_token(owner=ALICE, requester=CAROL, renewers=(BOB,))
    with pytest.raises(TokenOwnerMismatch):
        renew(token, caller(CAROL))


def test_renew_checks_63_before_66() -> None:
    with pytest.raises(TokenOwnerMismatch):
        renew(make_token(owner=ALICE, expiry=NOW - 1), caller(STRANGER))


def test_renew_owner_mismatch_ignores_principal_type() -> None:
    """A Group:alice is not the owner User:alice."""
    with pytest.raises(TokenOwnerMismatch):
        renew(make_token(owner=ALICE), caller(KafkaPrincipal("Group", "alice")))


def test_renew_by_owner_returns_new_expiry() -> None:
    assert renew(make_token(owner=ALICE), caller(ALICE), period=HOUR) == NOW + HOUR


def test_renew_by_renewer_is_allowed() -> None:
    token = make_token(owner=ALICE, renewers=(BOB, CAROL))
    assert renew(token, caller(CAROL), period=HOUR) == NOW + HOUR


def test_renew_by_super_user_is_allowed() -> None:
    authorizer = FakeAuthorizer(super_users=[ADMIN])
    assert renew(make_token(owner=ALICE), caller(ADMIN), period=HOUR, authorizer=authorizer) == NOW + HOUR


def test_renew_by_super_user_with_super_users_only_authorizer() -> None:
    expiry = plan_renew(
        make_token(owner=ALICE),
        caller(ADMIN),
        renew_period_ms=HOUR,
        now_ms=NOW,
        policy=POLICY,
        authorizer=SuperUsersOnly([ADMIN]),
    )
    assert expiry == NOW + HOUR


def test_renew_of_token_past_expiry_is_66() -> None:
    with pytest.raises(TokenExpired) as excinfo:
        renew(make_token(expiry=NOW - 1), caller(ALICE))
    assert excinfo.value.code == 66


def test_renew_of_token_past_max_is_66_even_if_expiry_is_later() -> None:
    with pytest.raises(TokenExpired):
        renew(make_token(expiry=NOW + HOUR, max_timestamp=NOW - 1), caller(ALICE))


def test_renew_when_expiry_equals_now_is_not_expired() -> None:
    """Kafka's test is strict: expiry < now."""
    assert renew(make_token(expiry=NOW), caller(ALICE), period=HOUR) == NOW + HOUR


def test_renew_when_max_equals_now_is_not_expired() -> None:
    token = make_token(expiry=NOW, max_timestamp=NOW)
    assert renew(token, caller(ALICE), period=HOUR) == NOW


@pytest.mark.parametrize("period", [-1, -2, -DAY, -(2**63)])
def test_renew_negative_period_means_default_renew(period: int) -> None:
    assert renew(make_token(), caller(ALICE), period=period) == NOW + DEFAULT_RENEW


def test_renew_period_zero_sets_expiry_to_now() -> None:
    assert renew(make_token(), caller(ALICE), period=0) == NOW


def test_renew_is_clamped_to_max_timestamp() -> None:
    token = make_token(max_timestamp=NOW + 2 * HOUR)
    assert renew(token, caller(ALICE), period=3 * HOUR) == NOW + 2 * HOUR


def test_renew_default_period_is_clamped_to_max_timestamp() -> None:
    token = make_token(max_timestamp=NOW + HOUR)
    assert renew(token, caller(ALICE), period=-1) == NOW + HOUR


def test_renew_huge_period_is_clamped_to_max_timestamp() -> None:
    token = make_token(max_timestamp=NOW + 6 * DAY)
    assert renew(token, caller(ALICE), period=LONG_MAX) == NOW + 6 * DAY


def test_renew_can_shorten_the_expiry() -> None:
    token = make_token(expiry=NOW + 2 * DAY)
    assert renew(token, caller(ALICE), period=HOUR) == NOW + HOUR


# -------------------- expire


def test_expire_refuses_token_authenticated_caller_with_64() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        expire(make_token(owner=ALICE), token_caller(ALICE))


def test_expire_checks_64_before_63() -> None:
    with pytest.raises(TokenRequestNotAllowed):
        expire(make_token(owner=ALICE), token_caller(STRANGER))


def test_expire_by_neither_owner_nor_renewer_is_63() -> None:
    with pytest.raises(TokenOwnerMismatch):
        expire(make_token(owner=ALICE, renewers=(BOB,)), caller(STRANGER))


def test_expire_of_expired_token_by_stranger_is_still_63() -> None:
    with pytest.raises(TokenOwnerMismatch):
        expire(make_token(owner=ALICE, expiry=NOW - 1), caller(STRANGER))


def test_expire_by_requester_who_is_not_owner_or_renewer_is_63() -> None:
    with pytest.raises(TokenOwnerMismatch):
        expire(make_token(owner=ALICE, requester=CAROL), caller(CAROL))


def test_expire_by_renewer_is_allowed() -> None:
    token = make_token(owner=ALICE, renewers=(BOB,))
    assert expire(token, caller(BOB), period=-1) == DeleteToken(NOW)


def test_expire_by_super_user_is_allowed() -> None:
    authorizer = FakeAuthorizer(super_users=[ADMIN])
    decision = expire(make_token(owner=ALICE), caller(ADMIN), period=-1, authorizer=authorizer)
    assert decision == DeleteToken(NOW)


@pytest.mark.parametrize("period", [-1, -HOUR, -(2**63)])
def test_expire_negative_period_deletes_the_token_now(period: int) -> None:
    assert expire(make_token(), caller(ALICE), period=period, now=NOW + 5) == DeleteToken(NOW + 5)


def test_expire_already_expired_token_is_deleted_even_with_positive_period() -> None:
    token = make_token(expiry=NOW - 1)
    assert expire(token, caller(ALICE), period=HOUR) == DeleteToken(NOW)


def test_expire_token_past_max_is_deleted_even_with_positive_period() -> None:
    token = make_token(expiry=NOW + HOUR, max_timestamp=NOW - 1)
    assert expire(token, caller(ALICE), period=HOUR) == DeleteToken(NOW)


def test_expire_with_positive_period_sets_expiry() -> None:
    assert expire(make_token(), caller(ALICE), period=HOUR) == SetExpiry(NOW + HOUR)


def test_expire_with_period_zero_sets_expiry_to_now_rather_than_deleting() -> None:
    assert expire(make_token(), caller(ALICE), period=0) == SetExpiry(NOW)


def test_expire_when_expiry_equals_now_is_not_expired_yet() -> None:
    assert expire(make_token(expiry=NOW), caller(ALICE), period=HOUR) == SetExpiry(NOW + HOUR, extended=True)


def test_expire_period_is_clamped_to_max_timestamp() -> None:
    token = make_token(expiry=NOW + HOUR, max_timestamp=NOW + 2 * HOUR)
    assert expire(token, caller(ALICE), period=LONG_MAX) == SetExpiry(NOW + 2 * HOUR, extended=True)


def test_expire_may_extend_expiry_up_to_max_as_kafka_does_and_says_it_extends() -> None:
    token = make_token(expiry=NOW + HOUR, max_timestamp=NOW + 6 * DAY)
    assert expire(token, caller(ALICE), period=2 * DAY) == SetExpiry(NOW + 2 * DAY, extended=True)
    # a long period is capped at the maximum, as a renew's is
    assert expire(token, caller(ALICE), period=30 * DAY) == SetExpiry(NOW + 6 * DAY, extended=True)


def test_expire_to_the_same_or_an_earlier_expiry_does_not_extend() -> None:
    token = make_token(expiry=NOW + 2 * HOUR)
    assert expire(token, caller(ALICE), period=2 * HOUR) == SetExpiry(NOW + 2 * HOUR, extended=False)
    assert expire(token, caller(ALICE), period=HOUR) == SetExpiry(NOW + HOUR, extended=False)


# -------------------- may_manage


def test_may_manage_owner_renewer_and_super_user_only() -> None:
    token = make_token(owner=ALICE, requester=CAROL, renewers=(BOB,))
    authorizer = FakeAuthorizer(super_users=[ADMIN])
    assert may_manage(token, caller(ALICE), authorizer)
    assert may_manage(token, caller(BOB), authorizer)
    assert may_manage(token, caller(ADMIN), authorizer)
    assert not may_manage(token, caller(CAROL), authorizer)
    assert not may_manage(token, caller(STRANGER), authorizer)


# -------------------- describe


def test_owner_filter_none_matches_every_token() -> None:
    assert matches_owner_filter(make_token(owner=ALICE), None)


def test_owner_filter_empty_list_matches_no_token() -> None:
    assert not matches_owner_filter(make_token(owner=ALICE), [])


@pytest.mark.parametrize("wanted", [ALICE, BOB, CAROL], ids=["owner", "renewer", "requester"])
def test_owner_filter_matches_owner_renewer_or_requester(wanted: KafkaPrincipal) -> None:
    token = make_token(owner=ALICE, renewers=(BOB,), requester=CAROL)
    assert matches_owner_filter(token, [wanted])


def test_owner_filter_does_not_match_unrelated_principal() -> None:
    token = make_token(owner=ALICE, renewers=(BOB,), requester=CAROL)
    assert not matches_owner_filter(token, [DAVE])
    assert matches_owner_filter(token, [DAVE, BOB])


def _all_seeing() -> FakeAuthorizer:
    return FakeAuthorizer(super_users=[ADMIN])


def test_describe_with_owners_none_returns_all_visible_tokens() -> None:
    tokens = [make_token("t1", owner=ALICE), make_token("t2", owner=BOB)]
    result = describe(tokens, caller(ADMIN), None, _all_seeing())
    assert [token.token_id for token in result] == ["t1", "t2"]


def test_describe_with_empty_owner_list_returns_nothing() -> None:
    tokens = [make_token("t1", owner=ALICE), make_token("t2", owner=ADMIN)]
    assert describe(tokens, caller(ADMIN), [], _all_seeing()) == []


def test_describe_filter_selects_by_owner_renewer_and_requester() -> None:
    tokens = [
        make_token("t1", owner=ALICE),
        make_token("t2", owner=BOB, renewers=(ALICE,)),
        make_token("t3", owner=CAROL, requester=ALICE),
        make_token("t4", owner=DAVE),
    ]
    result = describe(tokens, caller(ADMIN), [ALICE], _all_seeing())
    assert [token.token_id for token in result] == ["t1", "t2", "t3"]


@pytest.mark.parametrize("viewer", [ALICE, BOB, CAROL], ids=["owner", "renewer", "requester"])
def test_describe_token_is_visible_to_owner_renewer_and_requester(viewer: KafkaPrincipal) -> None:
    token = make_token(owner=ALICE, renewers=(BOB,), requester=CAROL)
    assert describe([token], caller(viewer), None, deny_all()) == [token]
    assert may_describe(token, caller(viewer), deny_all())


def test_describe_token_is_invisible_to_stranger() -> None:
    token = make_token(owner=ALICE, renewers=(BOB,), requester=CAROL)
    assert describe([token], caller(STRANGER), None, deny_all()) == []
    assert not may_describe(token, caller(STRANGER), deny_all())


def test_describe_token_is_visible_to_token_authenticated_owner() -> None:
    token = make_token(owner=ALICE)
    assert describe([token], token_caller(ALICE), None, deny_all()) == [token]


def test_describe_filter_applies_even_to_visible_tokens() -> None:
    token = make_token(owner=ALICE)
    assert describe([token], caller(ALICE), [BOB], deny_all()) == []


def test_describe_stranger_with_describe_on_the_delegation_token_sees_it() -> None:
    token = make_token("tok-x", owner=ALICE)
    authorizer = FakeAuthorizer([(STRANGER, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-x")])
    who = caller(STRANGER)
    assert describe([token], who, None, authorizer) == [token]
    assert (who, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-x") in authorizer.calls


def test_describe_stranger_with_describe_tokens_on_owner_user_sees_it() -> None:
    token = make_token("tok-x", owner=ALICE)
    authorizer = FakeAuthorizer([(STRANGER, Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:alice")])
    who = caller(STRANGER)
    assert describe([token], who, None, authorizer) == [token]
    assert (who, Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:alice") in authorizer.calls


def test_describe_asks_the_authorizer_exactly_these_two_questions_for_a_stranger() -> None:
    token = make_token("tok-x", owner=ALICE)
    authorizer = deny_all()
    who = caller(STRANGER)
    assert describe([token], who, None, authorizer) == []
    assert sorted(authorizer.calls, key=lambda call: call[1].value) == [
        (who, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-x"),
        (who, Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:alice"),
    ]


@pytest.mark.parametrize(
    "grant",
    [
        pytest.param((STRANGER, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-other"), id="other-token"),
        pytest.param((STRANGER, Operation.DESCRIBE_TOKENS, ResourceType.USER, "User:bob"), id="other-owner"),
        pytest.param((STRANGER, Operation.DESCRIBE_TOKENS, ResourceType.USER, "alice"), id="owner-without-type"),
        pytest.param((STRANGER, Operation.DESCRIBE, ResourceType.USER, "User:alice"), id="describe-on-user"),
        pytest.param(
            (STRANGER, Operation.DESCRIBE_TOKENS, ResourceType.DELEGATION_TOKEN, "tok-x"),
            id="describe-tokens-on-token",
        ),
        pytest.param((BOB, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-x"), id="other-principal"),
    ],
)
def test_describe_unrelated_grants_do_not_reveal_the_token(grant: Grant) -> None:
    token = make_token("tok-x", owner=ALICE)
    assert describe([token], caller(STRANGER), None, FakeAuthorizer([grant])) == []


def test_describe_result_is_sorted_by_token_id() -> None:
    tokens = [make_token(token_id) for token_id in ["m", "B", "a", "Z", "_", "-", "0"]]
    result = describe(tokens, caller(ALICE), None, deny_all())
    assert [token.token_id for token in result] == sorted(["m", "B", "a", "Z", "_", "-", "0"])


def test_describe_hides_invisible_tokens_among_visible_ones() -> None:
    tokens = [make_token("t1", owner=ALICE), make_token("t2", owner=BOB), make_token("t3", owner=ALICE)]
    result = describe(tokens, caller(ALICE), None, deny_all())
    assert [token.token_id for token in result] == ["t1", "t3"]


def test_a_super_user_sees_every_selected_token_without_a_question_per_token() -> None:
    tokens = [make_token("t2", owner=BOB), make_token("t1", owner=ALICE)]
    authorizer = _all_seeing()
    assert [token.token_id for token in visible_in_order(tokens, caller(ADMIN), authorizer)] == ["t1", "t2"]
    assert [token.token_id for token in describe(tokens, caller(ADMIN), [BOB], authorizer)] == ["t2"]
    page = describe_page(sorted(tokens, key=lambda token: token.token_id), caller(ADMIN), authorizer, limit=1)
    assert [token.token_id for token in page.tokens] == ["t1"] and page.next_after == "t1"
    assert authorizer.calls == []


def test_visible_in_order_hides_what_describe_hides() -> None:
    tokens = [make_token("t3", owner=ALICE), make_token("t2", owner=BOB), make_token("t1", owner=STRANGER)]
    for viewer in (ALICE, BOB, STRANGER, ADMIN):
        authorizer = FakeAuthorizer([], super_users=[ADMIN])
        assert visible_in_order(tokens, caller(viewer), authorizer) == describe(
            tokens, caller(viewer), None, authorizer
        )


# -------------------- paginate


def _ordered(*token_ids: str) -> list[TokenInformation]:
    return [make_token(token_id) for token_id in sorted(token_ids)]


def _ids(page: Page) -> list[str]:
    return [token.token_id for token in page.tokens]


def test_paginate_empty_input_is_an_empty_last_page() -> None:
    page = paginate([], limit=10, after=None)
    assert page.tokens == []
    assert page.next_after is None


def test_paginate_empty_input_with_cursor_is_an_empty_last_page() -> None:
    assert paginate([], limit=10, after="x") == Page([], None)


def test_paginate_first_page_is_limited_and_points_at_its_last_token() -> None:
    page = paginate(_ordered("a", "b", "c", "d", "e"), limit=2, after=None)
    assert _ids(page) == ["a", "b"]
    assert page.next_after == "b"


def test_paginate_after_cursor_continues_after_it() -> None:
    page = paginate(_ordered("a", "b", "c", "d", "e"), limit=2, after="b")
    assert _ids(page) == ["c", "d"]
    assert page.next_after == "d"


def test_paginate_last_page_has_no_next_cursor() -> None:
    page = paginate(_ordered("a", "b", "c", "d", "e"), limit=2, after="d")
    assert _ids(page) == ["e"]
    assert page.next_after is None


def test_paginate_page_that_exactly_fills_the_rest_has_no_next_cursor() -> None:
    page = paginate(_ordered("a", "b", "c", "d"), limit=2, after="b")
    assert _ids(page) == ["c", "d"]
    assert page.next_after is None


def test_paginate_single_page_has_no_next_cursor() -> None:
    page = paginate(_ordered("a", "b"), limit=10, after=None)
    assert _ids(page) == ["a", "b"]
    assert page.next_after is None


def test_paginate_cursor_past_the_end_is_an_empty_last_page() -> None:
    assert paginate(_ordered("a", "b"), limit=10, after="zzz") == Page([], None)


def test_paginate_walk_visits_every_token_once() -> None:
    ordered = _ordered(*(f"t{index:03d}" for index in range(23)))
    seen: list[str] = []
    after: str | None = None
    pages = 0
    while True:
        page = paginate(ordered, limit=5, after=after)
        pages += 1
        seen.extend(_ids(page))
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == [token.token_id for token in ordered]
    assert pages == 5


def test_paginate_is_stable_when_a_token_before_the_cursor_is_removed() -> None:
    ordered = _ordered("a", "b", "c", "d", "e", "f")
    first = paginate(ordered, limit=3, after=None)
    assert first.next_after == "c"
    without_b = [token for token in ordered if token.token_id != "b"]
    second = paginate(without_b, limit=3, after=first.next_after)
    assert _ids(second) == ["d", "e", "f"]


def test_paginate_is_stable_when_the_cursor_token_itself_is_removed() -> None:
    ordered = _ordered("a", "b", "c", "d", "e", "f")
    first = paginate(ordered, limit=3, after=None)
    without_c = [token for token in ordered if token.token_id != "c"]
    assert _ids(paginate(without_c, limit=3, after=first.next_after)) == ["d", "e", "f"]


def test_paginate_is_stable_when_a_token_is_added_before_the_cursor() -> None:
    ordered = _ordered("b", "c", "d", "e")
    first = paginate(ordered, limit=2, after=None)
    with_a = _ordered("a", "b", "c", "d", "e")
    assert _ids(paginate(with_a, limit=2, after=first.next_after)) == ["d", "e"]


# -------------------- TokenInformation


def test_authenticates_before_expiry_and_max() -> None:
    token = make_token(expiry=NOW + 10, max_timestamp=NOW + 20)
    assert token.authenticates_at(NOW)
    assert token.authenticates_at(NOW + 9)


def test_does_not_authenticate_at_the_expiry_instant() -> None:
    assert not make_token(expiry=NOW, max_timestamp=NOW + DAY).authenticates_at(NOW)


def test_does_not_authenticate_after_expiry() -> None:
    assert not make_token(expiry=NOW, max_timestamp=NOW + DAY).authenticates_at(NOW + 1)


def test_does_not_authenticate_at_the_max_instant_even_if_expiry_is_later() -> None:
    assert not make_token(expiry=NOW + DAY, max_timestamp=NOW).authenticates_at(NOW)


def test_does_not_authenticate_after_max() -> None:
    assert not make_token(expiry=NOW + DAY, max_timestamp=NOW).authenticates_at(NOW + 1)


def test_is_expired_is_strictly_past_expiry_or_max() -> None:
    assert not make_token(expiry=NOW, max_timestamp=NOW).is_expired(NOW)
    assert make_token(expiry=NOW - 1, max_timestamp=NOW + DAY).is_expired(NOW)
    assert make_token(expiry=NOW + DAY, max_timestamp=NOW - 1).is_expired(NOW)


def test_owner_or_renewer() -> None:
    token = make_token(owner=ALICE, renewers=(BOB,), requester=CAROL)
    assert token.owner_or_renewer(ALICE)
    assert token.owner_or_renewer(BOB)
    assert not token.owner_or_renewer(CAROL)


def test_authenticated_principal_is_user_with_owner_name_dropping_the_type() -> None:
    assert make_token(owner=ALICE).authenticated_principal == ALICE
    assert make_token(owner=KafkaPrincipal("Group", "x")).authenticated_principal == KafkaPrincipal.user("x")


def test_with_expiry_changes_only_the_expiry() -> None:
    token = make_token(owner=ALICE, renewers=(BOB,), requester=CAROL)
    changed = token.with_expiry(NOW + 5)
    assert changed.expiry_timestamp == NOW + 5
    assert changed == TokenInformation(
        token.token_id, ALICE, CAROL, (BOB,), token.issue_timestamp, NOW + 5, token.max_timestamp
    )
    assert token.expiry_timestamp == NOW + DAY  # the original is untouched (frozen)


# -------------------- SuperUsersOnly


def test_super_users_only_knows_its_super_users() -> None:
    authorizer = SuperUsersOnly([ADMIN, BOB])
    assert authorizer.is_super_user(ADMIN)
    assert authorizer.is_super_user(BOB)
    assert not authorizer.is_super_user(ALICE)
    assert not authorizer.is_super_user(KafkaPrincipal("Group", "admin"))


@pytest.mark.parametrize("operation", list(Operation))
@pytest.mark.parametrize("resource_type", list(ResourceType))
def test_super_users_only_grants_everything_to_super_users_and_nothing_to_others(
    operation: Operation, resource_type: ResourceType
) -> None:
    authorizer = SuperUsersOnly([ADMIN])
    assert authorizer.authorize(caller(ADMIN), operation, resource_type, "User:alice")
    assert not authorizer.authorize(caller(ALICE), operation, resource_type, "User:alice")


def test_super_users_only_with_no_super_users_grants_nothing() -> None:
    authorizer = SuperUsersOnly([])
    assert not authorizer.is_super_user(ADMIN)
    assert not authorizer.authorize(caller(ADMIN), Operation.ALL, ResourceType.CLUSTER, "kafka-cluster")


def test_caller_is_token_authenticated_only_with_a_token_id() -> None:
    assert not caller(ALICE).token_authenticated
    assert token_caller(ALICE).token_authenticated


# --- a listing read in token id order (describe_page) -----------------------------------------------------


def _population() -> list[TokenInformation]:
    principals = (ALICE, BOB, CAROL, DAVE, ADMIN)
    return [
        make_token(
            f"tok-{n:03d}",
            owner=principals[n % 5],
            requester=principals[(n // 5) % 5],
            renewers=(principals[(n // 25) % 5],) if n % 3 else (),
        )
        for n in range(60)
    ]


@pytest.mark.parametrize(
    "authorizer",
    [
        deny_all(),
        FakeAuthorizer(super_users=[STRANGER]),
        FakeAuthorizer([(STRANGER, Operation.DESCRIBE_TOKENS, ResourceType.USER, str(CAROL))]),
        FakeAuthorizer([(STRANGER, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-007")]),
    ],
    ids=["no-grants", "super-user", "describe-tokens-of-carol", "describe-one-token"],
)
@pytest.mark.parametrize("who", [STRANGER, ALICE])
@pytest.mark.parametrize("limit", [1, 7, 100])
def test_describe_page_walks_to_the_same_pages_as_paginate_over_describe(
    authorizer: FakeAuthorizer, who: KafkaPrincipal, limit: int
) -> None:
    tokens = _population()
    ordered = sorted(tokens, key=lambda token: token.token_id)
    expected = describe(list(reversed(tokens)), caller(who), None, authorizer)
    after: str | None = None
    walked: list[TokenInformation] = []
    while True:
        remaining = (token for token in ordered if after is None or token.token_id > after)
        page = describe_page(remaining, caller(who), authorizer, limit=limit)
        assert page == paginate(expected, limit=limit, after=after)
        walked += page.tokens
        if page.next_after is None:
            break
        after = page.next_after
    assert walked == expected


def test_describe_page_reads_no_further_than_the_first_visible_token_past_the_page() -> None:
    read: list[str] = []

    def ordered() -> Iterable[TokenInformation]:
        for token in sorted(_population(), key=lambda token: token.token_id):
            read.append(token.token_id)
            yield token

    page = describe_page(ordered(), caller(ADMIN), FakeAuthorizer(super_users=[ADMIN]), limit=5)
    assert [token.token_id for token in page.tokens] == read[:5]
    assert page.next_after == "tok-004"
    assert len(read) == 6


def test_who_may_see_tokens_beyond_their_own() -> None:
    assert not may_see_others_tokens(caller(ALICE), deny_all())
    assert may_see_others_tokens(caller(ADMIN), FakeAuthorizer(super_users=[ADMIN]))
    grant = (ALICE, Operation.DESCRIBE_TOKENS, ResourceType.USER, str(BOB))
    assert may_see_others_tokens(caller(ALICE), FakeAuthorizer([grant]))
    assert not may_see_others_tokens(caller(CAROL), FakeAuthorizer([grant]))
    one_token = (ALICE, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, "tok-1")
    assert may_see_others_tokens(caller(ALICE), FakeAuthorizer([one_token]))


def test_token_renewers_add_names_its_principals_renewers_of_every_token_after_those_asked_for() -> None:
    kts = KafkaPrincipal.user("kts")
    policy = TokenPolicy(max_lifetime_ms=MAX_LIFETIME, default_renew_ms=DEFAULT_RENEW, added_renewers=(kts,))
    assert create(caller(ALICE), policy=policy).renewers == (kts,)
    assert create(caller(ALICE), renewers=(BOB, kts), policy=policy).renewers == (BOB, kts)  # once
    assert create(caller(ALICE), renewers=(BOB,), policy=policy).renewers == (BOB, kts)
