"""Per-user token quotas, both charged to the principal that makes the token: how many live tokens one
principal may hold that it made for itself (``token.quota.per.owner``), and how many it may hold that it made
for other owners (``token.quota.per.requester``, KIP-373). ``0`` is no limit.

A token made by a requester for an owner counts against the requester's quota only, never the owner's: a
requester with ``CreateTokens`` on an owner cannot fill that owner's quota and lock the owner out of making
its own tokens. And a refusal speaks of the caller's own quota only, so it never tells one principal how many
tokens another holds.

A token is live until it has expired (``TokenInformation.is_expired``), whether or not the sweeper has
deleted it yet: an expired token never counts. Pure rules; the service counts, the store makes the count
exact across replicas (app/service/token_quotas.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from app.domain.errors import TokenQuotaExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation


class QuotaKind(StrEnum):
    OWNER = "owner"  # live tokens the principal owns and made itself
    REQUESTER = "requester"  # live tokens the principal requested for other owners


@dataclass(frozen=True, slots=True)
class QuotaKey:
    """One counter a create is charged to."""

    kind: QuotaKind
    principal: KafkaPrincipal


@dataclass(frozen=True, slots=True)
class TokenQuota:
    per_owner: int = 0  # token.quota.per.owner
    per_requester: int = 0  # token.quota.per.requester
    exempt_super_users: bool = False  # token.quota.exempt.super.users

    def __post_init__(self) -> None:
        if self.per_owner < 0 or self.per_requester < 0:
            raise ValueError("token quotas must be 0 (no limit) or more")

    def limit(self, kind: QuotaKind) -> int:
        return self.per_owner if kind is QuotaKind.OWNER else self.per_requester

    def keys(self, token: TokenInformation, *, requester_is_super_user: bool) -> list[QuotaKey]:
        """The counter a new ``token`` is charged to, always its requester's: the owner quota when it made
        the token for itself, the requester quota when for another owner; none with no limit set, or for an
        exempt super user."""
        if requester_is_super_user and self.exempt_super_users:
            return []
        requester = token.token_requester
        if token.owner == requester:
            return [QuotaKey(QuotaKind.OWNER, requester)] if self.per_owner > 0 else []
        return [QuotaKey(QuotaKind.REQUESTER, requester)] if self.per_requester > 0 else []


def counts_against(key: QuotaKey, token: TokenInformation, now_ms: int) -> bool:
    """``token`` uses up one unit of ``key``'s quota at ``now_ms``."""
    if token.is_expired(now_ms) or token.token_requester != key.principal:
        return False
    if key.kind is QuotaKind.OWNER:
        return token.owner == key.principal
    return token.owner != key.principal


def ensure_within(quota: TokenQuota, live: Mapping[QuotaKey, int]) -> None:
    """Raise TokenQuotaExceeded when one more token would take a counter past its limit; ``live`` holds
    the live tokens counted against each key the new token is charged to."""
    for key, count in live.items():
        limit = quota.limit(key.kind)
        if 0 < limit <= count:
            if key.kind is QuotaKind.OWNER:
                what = f"The owner quota of {key.principal} (token.quota.per.owner)"
            else:
                what = f"The quota of tokens {key.principal} holds for other owners (token.quota.per.requester)"
            raise TokenQuotaExceeded(
                f"{what} is {limit} live tokens and {count} live tokens count against it; "
                "expire a token or wait for one to expire."
            )
