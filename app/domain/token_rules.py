"""Kafka's delegation token semantics as pure functions of (state, request, now); the rules are described in
docs/kafka-compatibility.md#semantics-of-the-token-operations.

Nothing here reads a clock, a store or the network: the service gathers the inputs, asks these functions
what to do, and then does it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from app.domain.authorization import Authorizer, Caller, Operation, ResourceType
from app.domain.errors import (
    InvalidPrincipalType,
    TokenAuthorizationFailed,
    TokenExpired,
    TokenOwnerMismatch,
    TokenRequestNotAllowed,
)
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_job import TokenJob


@dataclass(frozen=True, slots=True)
class TokenPolicy:
    """The broker settings that shape token lifetimes."""

    max_lifetime_ms: int  # delegation.token.max.lifetime.ms
    default_renew_ms: int  # delegation.token.expiry.time.ms
    # token.create.for.super.users: a token authenticates as its owner, so one made for a super user by
    # someone else is that super user's power in other hands.
    create_for_super_users: bool = False
    # token.renewers.add (ZooKeeper mode): renewers of every token created, besides those asked for, so that kts on
    # bootstrap.servers may renew and expire the token after a migration to KRaft (docs/operations.md).
    added_renewers: tuple[KafkaPrincipal, ...] = ()

    def __post_init__(self) -> None:
        if self.max_lifetime_ms < 1 or self.default_renew_ms < 1:
            raise ValueError("token lifetimes must be at least 1 ms")


@dataclass(frozen=True, slots=True)
class CreateRequest:
    owner: KafkaPrincipal | None
    renewers: tuple[KafkaPrincipal, ...]
    max_lifetime_ms: int
    job: TokenJob | None = None  # for the audit trail only: no rule reads it, the cluster never sees it


@dataclass(frozen=True, slots=True)
class DeleteToken:
    """Expire now: the token znode goes away."""

    expiry_timestamp: int


@dataclass(frozen=True, slots=True)
class SetExpiry:
    """Keep the token with a new expiry. ``extended``: the new expiry is later than the current one, so this
    expire is a renew by another name (capped at the maximum as a renew is) and is admitted as one."""

    expiry_timestamp: int
    extended: bool = False


ExpireDecision = DeleteToken | SetExpiry


def ensure_may_request_tokens(caller: Caller) -> None:
    """Kafka answers 64 to token requests from callers who logged in with a delegation token."""
    if caller.token_authenticated:
        raise TokenRequestNotAllowed(
            "A caller authenticated with a delegation token may not create, renew or expire tokens."
        )


def plan_create(
    caller: Caller,
    request: CreateRequest,
    *,
    token_id: str,
    now_ms: int,
    policy: TokenPolicy,
    authorizer: Authorizer,
) -> TokenInformation:
    """The token a create request makes, in Kafka's order of checks: 64, then 65, then 67. Unlike Kafka, a
    token for a super user made by someone else is refused (65) unless the policy allows it."""
    ensure_may_request_tokens(caller)
    requester = caller.principal
    owner = request.owner if request.owner is not None else requester
    if owner != requester and not authorizer.authorize(caller, Operation.CREATE_TOKENS, ResourceType.USER, str(owner)):
        raise TokenAuthorizationFailed(f"{requester} may not create tokens for {owner}.")
    if (
        owner != requester
        and not policy.create_for_super_users
        and authorizer.is_super_user(owner)
        and not authorizer.is_super_user(requester)
    ):
        raise TokenAuthorizationFailed(
            f"{requester} may not create tokens for {owner}: only super users may create tokens for a super user."
        )
    if not owner.is_user:
        # Kafka does not check this, but a token authenticates as User:<owner name>, so any other owner
        # type would silently become a different principal.
        raise InvalidPrincipalType("The token owner must be a principal of type User.")
    for renewer in request.renewers:
        if not renewer.is_user:
            raise InvalidPrincipalType(f"Renewer {renewer} is not of principal type User.")
    requested = request.max_lifetime_ms
    lifetime = policy.max_lifetime_ms if requested <= 0 else min(requested, policy.max_lifetime_ms)
    max_timestamp = now_ms + lifetime
    return TokenInformation(
        token_id=token_id,
        owner=owner,
        token_requester=requester,
        renewers=tuple(dict.fromkeys((*request.renewers, *policy.added_renewers))),
        issue_timestamp=now_ms,
        expiry_timestamp=min(max_timestamp, now_ms + policy.default_renew_ms),
        max_timestamp=max_timestamp,
    )


def may_manage(token: TokenInformation, caller: Caller, authorizer: Authorizer) -> bool:
    """Owner and renewers may renew and expire, as in Kafka; super users too (a gap Kafka has)."""
    return token.owner_or_renewer(caller.principal) or authorizer.is_super_user(caller.principal)


def plan_renew(
    token: TokenInformation,
    caller: Caller,
    *,
    renew_period_ms: int,
    now_ms: int,
    policy: TokenPolicy,
    authorizer: Authorizer,
) -> int:
    """The new expiry timestamp. Checks in Kafka's order: 64, (62 by the caller), 63, then 66."""
    ensure_may_request_tokens(caller)
    if not may_manage(token, caller, authorizer):
        raise TokenOwnerMismatch(f"{caller.principal} is neither the owner nor a renewer of this token.")
    if token.is_expired(now_ms):
        raise TokenExpired("The token has already expired and can no longer be renewed.")
    period = policy.default_renew_ms if renew_period_ms < 0 else renew_period_ms
    return min(token.max_timestamp, now_ms + period)


def plan_expire(
    token: TokenInformation,
    caller: Caller,
    *,
    expiry_period_ms: int,
    now_ms: int,
    authorizer: Authorizer,
) -> ExpireDecision:
    """A negative period deletes the token now; so does expiring an already-expired one (Kafka >= 3.5).
    Otherwise the new expiry is ``min(maxTimestamp, now + period)``, as Kafka has it: a long period moves the
    expiry later (``extended``), never past the maximum."""
    ensure_may_request_tokens(caller)
    if not may_manage(token, caller, authorizer):
        raise TokenOwnerMismatch(f"{caller.principal} is neither the owner nor a renewer of this token.")
    if expiry_period_ms < 0 or token.is_expired(now_ms):
        return DeleteToken(now_ms)
    expiry = min(token.max_timestamp, now_ms + expiry_period_ms)
    return SetExpiry(expiry, extended=expiry > token.expiry_timestamp)


_TOKEN_ID = attrgetter("token_id")


def matches_owner_filter(token: TokenInformation, owners: Sequence[KafkaPrincipal] | None) -> bool:
    """``None`` means every token, an empty list none; a filter entry matches owner, renewer or requester."""
    if owners is None:
        return True
    return any(token.owner_or_renewer(owner) or token.token_requester == owner for owner in owners)


def may_describe(token: TokenInformation, caller: Caller, authorizer: Authorizer) -> bool:
    principal = caller.principal
    if token.owner_or_renewer(principal) or token.token_requester == principal:
        return True
    return authorizer.authorize(
        caller, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id
    ) or authorizer.authorize(caller, Operation.DESCRIBE_TOKENS, ResourceType.USER, str(token.owner))


def describe(
    tokens: Iterable[TokenInformation],
    caller: Caller,
    owners: Sequence[KafkaPrincipal] | None,
    authorizer: Authorizer,
) -> list[TokenInformation]:
    """Tokens the filter selects and the caller may see, ordered by token id (the pagination order)."""
    if owners is not None:
        tokens = (token for token in tokens if matches_owner_filter(token, owners))
    return visible_in_order(tokens, caller, authorizer)


def visible_in_order(
    selected: Iterable[TokenInformation], caller: Caller, authorizer: Authorizer
) -> list[TokenInformation]:
    """``describe`` of tokens the filter has selected already (read from an index of owners, renewers and
    requesters): those the caller may see, ordered by token id. A super user passes every check
    (``Authorizer.is_super_user``), so sees every one: asked once, not for each token (most of what a super user's
    describe of 100 tokens cost the CPU, bench: describe p99)."""
    if not authorizer.is_super_user(caller.principal):
        selected = (token for token in selected if may_describe(token, caller, authorizer))
    return sorted(selected, key=_TOKEN_ID)


@dataclass(frozen=True, slots=True)
class Page:
    tokens: list[TokenInformation]
    next_after: str | None


def paginate(ordered: Sequence[TokenInformation], *, limit: int, after: str | None) -> Page:
    """Keyset pagination by token id: stable while tokens come and go between pages."""
    start = 0 if after is None else bisect_right(ordered, after, key=lambda token: token.token_id)
    page = list(ordered[start : start + limit])
    more = start + limit < len(ordered)
    return Page(page, page[-1].token_id if more and page else None)


def may_see_others_tokens(caller: Caller, authorizer: Authorizer) -> bool:
    """The caller may see some token it neither owns, renews nor requested (``may_describe``'s ACL paths);
    when not, its listing is the tokens it holds and nothing else need be looked at."""
    return authorizer.may_authorize_some(
        caller, Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN
    ) or authorizer.may_authorize_some(caller, Operation.DESCRIBE_TOKENS, ResourceType.USER)


def describe_page(ordered: Iterable[TokenInformation], caller: Caller, authorizer: Authorizer, *, limit: int) -> Page:
    """The page ``paginate(describe(...))`` answers with no owner filter, from ``ordered``: every token in
    token id order from the first after the cursor. Reads only as far as the first visible token past the
    page (a super user's page costs its own length, and asks nothing per token: ``visible_in_order``)."""
    sees_all = authorizer.is_super_user(caller.principal)
    page: list[TokenInformation] = []
    for token in ordered:
        if sees_all or may_describe(token, caller, authorizer):
            if len(page) == limit:
                return Page(page, page[-1].token_id if page else None)
            page.append(token)
    return Page(page, None)


def expired_tokens(tokens: Iterable[TokenInformation], now_ms: int) -> list[TokenInformation]:
    """What a sweep deletes: tokens past their expiry or their maximum (Kafka's expireTokens)."""
    return sorted((token for token in tokens if token.is_expired(now_ms)), key=lambda token: token.token_id)
