"""How a pending token event is settled from the cluster's state, when the change could not carry a marker.

On a cluster reached through the Kafka protocol a change is an RPC whose effect cannot be written together
with anything else (no intent marker as in ZooKeeper, app/service/audit.py), and the controller picks the
new token's id. So an event left pending (its replica died between the pending row, the RPC and the
completion, or the RPC's answer was lost) is settled by what the cluster shows: ``succeeded`` when the
cluster's state shows the change, ``failed`` when it does not. Pure rules over (event, token, times).

- **Create.** The token the event asked for is one that kts's own principal requested, for the event's
  owner, with the event's renewers (kts adds itself to every token's renewers), issued no earlier than the
  event was written (less ``skew_ms``), and no longer lived than it asked. Several pending creates for the
  same owner and renewers take such tokens in time order, the oldest event the oldest token.
- **Renew.** The change shows when the token's expiry is at least where the renew would have put it from the
  moment the event was written (the controller renewed later, so further still), no further than the default
  renew period (a KRaft controller's cap). A token that is gone shows no renew.
- **Expire.** The change shows when the token is gone, or its expiry is no later than the expire would have
  put it from the latest moment its RPC could have landed (``landing_ms`` after the event).

An expiry that already matched what the change would have done is read as the change: the trail then says
the state was reached, which is what it promises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation

SKEW_MS = 5_000  # how far the clocks of kts's replicas and of the controller may disagree


@dataclass(frozen=True, slots=True)
class PendingCreate:
    event_id: int
    timestamp: int  # when the pending event was written (kts's clock)
    owner: str
    renewers: frozenset[str]
    requested_max_lifetime_ms: int  # 0 or less: the cluster's maximum


def pending_create(
    event_id: int, timestamp: int, owner: str | None, details: Mapping[str, Any]
) -> PendingCreate | None:
    """The create a pending ``token.create`` event asked for; None when the event does not say (no owner)."""
    if owner is None:
        return None
    renewers = details.get("renewers")
    requested = details.get("requestedMaxLifetimeMs")
    return PendingCreate(
        event_id,
        timestamp,
        owner,
        frozenset(str(renewer) for renewer in renewers) if isinstance(renewers, list) else frozenset(),
        requested if isinstance(requested, int) and not isinstance(requested, bool) else -1,
    )


def could_have_made(
    create: PendingCreate, token: TokenInformation, *, own: KafkaPrincipal, skew_ms: int = SKEW_MS
) -> bool:
    """Whether ``token`` fits what ``create`` asked for (any one of several may)."""
    mine = str(own)
    if token.token_requester != own or str(token.owner) != create.owner:
        return False
    if {str(renewer) for renewer in token.renewers} - {mine} != create.renewers - {mine}:
        return False
    if token.issue_timestamp < create.timestamp - skew_ms:
        return False
    lifetime = token.max_timestamp - token.issue_timestamp
    return create.requested_max_lifetime_ms <= 0 or lifetime <= create.requested_max_lifetime_ms


def match_creates(
    creates: Sequence[PendingCreate],
    tokens: Iterable[TokenInformation],
    *,
    own: KafkaPrincipal,
    skew_ms: int = SKEW_MS,
) -> dict[int, TokenInformation]:
    """Each pending create's token, when the cluster has one that fits and no earlier create took it: events
    in the order written, each the earliest issued fitting token left."""
    candidates = sorted(tokens, key=lambda token: (token.issue_timestamp, token.token_id))
    taken: set[str] = set()
    matched: dict[int, TokenInformation] = {}
    for create in sorted(creates, key=lambda create: (create.timestamp, create.event_id)):
        for token in candidates:
            if token.token_id not in taken and could_have_made(create, token, own=own, skew_ms=skew_ms):
                matched[create.event_id] = token
                taken.add(token.token_id)
                break
    return matched


def renew_shows(
    token: TokenInformation | None,
    *,
    event_timestamp: int,
    renew_period_ms: int,
    default_renew_ms: int,
    skew_ms: int = SKEW_MS,
) -> bool:
    if token is None:
        return False
    # A KRaft controller renews no further than its default renew period, whatever was asked.
    period = default_renew_ms if renew_period_ms < 0 else min(renew_period_ms, default_renew_ms)
    return token.expiry_timestamp >= min(token.max_timestamp, event_timestamp + period) - skew_ms


def expire_shows(
    token: TokenInformation | None,
    *,
    event_timestamp: int,
    expiry_period_ms: int,
    landing_ms: int,
    skew_ms: int = SKEW_MS,
) -> bool:
    if token is None:
        return True
    return token.expiry_timestamp <= event_timestamp + max(0, expiry_period_ms) + landing_ms + skew_ms
