"""Settling pending token events by the cluster's state (app/domain/audit_settlement.py): which token a pending
create made, and whether a renew or an expire shows."""

from __future__ import annotations

import pytest

from app.domain.audit_settlement import (
    PendingCreate,
    could_have_made,
    expire_shows,
    match_creates,
    pending_create,
    renew_shows,
)
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation

KTS = KafkaPrincipal.user("kts")
ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
T0 = 1_700_000_000_000
DAY = 86_400_000
SKEW = 5_000


def token(
    token_id: str,
    *,
    issued: int = T0 + 10,
    owner: KafkaPrincipal = ALICE,
    requester: KafkaPrincipal = KTS,
    renewers: tuple[KafkaPrincipal, ...] = (KTS,),
    lifetime: int = 7 * DAY,
    expiry: int | None = None,
) -> TokenInformation:
    return TokenInformation(
        token_id, owner, requester, renewers, issued, issued + DAY if expiry is None else expiry, issued + lifetime
    )


def create(
    event_id: int = 1, *, at: int = T0, renewers: frozenset[str] = frozenset(), lifetime: int = -1
) -> PendingCreate:
    return PendingCreate(event_id, at, str(ALICE), renewers, lifetime)


def test_the_pending_event_says_what_was_asked() -> None:
    details = {"renewers": ["User:bob"], "requestedMaxLifetimeMs": 3_600_000}
    assert pending_create(7, T0, "User:alice", details) == PendingCreate(
        7, T0, "User:alice", frozenset({"User:bob"}), 3_600_000
    )
    assert pending_create(7, T0, None, details) is None
    assert pending_create(7, T0, "User:alice", {"renewers": "junk", "requestedMaxLifetimeMs": True}) == PendingCreate(
        7, T0, "User:alice", frozenset(), -1
    )


def test_a_token_fits_the_create_that_kts_sent_for_that_owner_and_renewers() -> None:
    asked = create(renewers=frozenset({"User:bob"}))
    assert could_have_made(asked, token("t", renewers=(BOB, KTS)), own=KTS)
    assert could_have_made(asked, token("t", renewers=(BOB,)), own=KTS)  # kts among them or not
    assert not could_have_made(asked, token("t", renewers=(KTS,)), own=KTS)  # bob missing
    assert not could_have_made(asked, token("t", renewers=(BOB, ALICE)), own=KTS)  # one too many
    assert not could_have_made(asked, token("t", renewers=(BOB,), owner=BOB), own=KTS)
    assert not could_have_made(asked, token("t", renewers=(BOB,), requester=ALICE), own=KTS)  # not kts's


@pytest.mark.parametrize(
    ("issued", "fits"),
    [(T0 - SKEW - 1, False), (T0 - SKEW, True), (T0, True), (T0 + DAY, True)],
)
def test_a_token_issued_before_the_event_was_written_is_not_its_own(issued: int, fits: bool) -> None:
    assert could_have_made(create(), token("t", issued=issued), own=KTS, skew_ms=SKEW) is fits


def test_a_token_living_longer_than_asked_is_not_the_one_asked_for() -> None:
    asked = create(lifetime=3_600_000)
    assert could_have_made(asked, token("t", lifetime=3_600_000), own=KTS)
    assert not could_have_made(asked, token("t", lifetime=3_600_001), own=KTS)
    assert could_have_made(create(lifetime=0), token("t", lifetime=7 * DAY), own=KTS)


def test_creates_take_fitting_tokens_in_time_order_and_no_token_twice() -> None:
    creates = [create(2, at=T0 + 1000), create(1, at=T0)]
    tokens = [token("late", issued=T0 + 1500), token("early", issued=T0 + 100), token("other", owner=BOB)]

    matched = match_creates(creates, tokens, own=KTS)

    assert {event_id: found.token_id for event_id, found in matched.items()} == {1: "early", 2: "late"}
    assert match_creates([create(1), create(2)], [token("only")], own=KTS).keys() == {1}
    assert match_creates([create(1)], [], own=KTS) == {}


def test_a_renew_shows_when_the_expiry_is_where_it_would_have_put_it() -> None:
    asked_at = T0 + DAY
    renewed = token("t", expiry=asked_at + DAY + 20)
    not_renewed = token("t", expiry=T0 + DAY)
    kwargs = {"event_timestamp": asked_at, "renew_period_ms": DAY, "default_renew_ms": DAY}
    assert renew_shows(renewed, **kwargs)
    assert not renew_shows(not_renewed, **kwargs)
    assert not renew_shows(None, **kwargs)  # gone: no renew shows
    capped = token("t", lifetime=DAY + 1000, expiry=T0 + 10 + DAY + 1000)  # at its maximum
    assert renew_shows(capped, event_timestamp=asked_at, renew_period_ms=DAY, default_renew_ms=DAY)
    assert renew_shows(renewed, event_timestamp=asked_at, renew_period_ms=-1, default_renew_ms=DAY)
    assert not renew_shows(renewed, event_timestamp=asked_at, renew_period_ms=-1, default_renew_ms=2 * DAY)
    # asked for two days; a KRaft controller renews no further than its default (one day here)
    assert renew_shows(renewed, event_timestamp=asked_at, renew_period_ms=2 * DAY, default_renew_ms=DAY)


def test_an_expire_shows_when_the_token_is_gone_or_ends_by_then() -> None:
    kwargs = {"event_timestamp": T0, "expiry_period_ms": 60_000, "landing_ms": 60_000, "skew_ms": SKEW}
    assert expire_shows(None, **kwargs)
    assert expire_shows(token("t", expiry=T0 + 90_000), **kwargs)
    assert expire_shows(token("t", expiry=T0 + 120_000 + SKEW), **kwargs)
    assert not expire_shows(token("t", expiry=T0 + 120_000 + SKEW + 1), **kwargs)
    assert not expire_shows(token("t", expiry=T0 + DAY), event_timestamp=T0, expiry_period_ms=-1, landing_ms=60_000)
