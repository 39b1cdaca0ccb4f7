"""When the leader sweeps expired tokens: every ``delegation.token.expiry.check.interval.ms`` as brokers do, and
sooner when expired tokens pile up.

Expired tokens no longer authenticate, but until they are swept they hold entries of the token list and a
notification to come each, against the cluster's budget and their requester's share (app/domain/capacity.py,
app/domain/token_share.py). Tokens made to expire at once could otherwise fill the lists for up to an hour. So
the leader looks every second and sweeps early once ``threshold`` expired tokens wait (a hundredth of the
tokens the budget admits), or once any wait while either list is past the 80% warning; early sweeps come at
most every ``EARLY_GAP_MS``, so a sweep that found no room to delete is not retried in a loop. The sweep itself
is unchanged: it decides, then deletes, paced by the room the notification list has.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from app.domain.capacity import CapacityPolicy, ChildList, Purpose

EARLY_GAP_MS = 5_000
CHECK_EVERY_MS = 1_000
PILED_UP_FRACTION = 100  # a hundredth of the tokens the budget admits


class SweepReason(enum.Enum):
    INTERVAL = "interval"
    PILED_UP = "expired tokens piled up"
    NEAR_CAPACITY = "a token list is near its limit"


@dataclass(frozen=True, slots=True)
class SweepSchedule:
    interval_ms: int  # delegation.token.expiry.check.interval.ms
    threshold: int  # expired tokens that bring the sweep forward

    def __post_init__(self) -> None:
        if self.interval_ms < 1 or self.threshold < 1:
            raise ValueError("a sweep interval and threshold are at least 1")

    @classmethod
    def of(cls, interval_ms: int, policy: CapacityPolicy) -> SweepSchedule:
        tokens = policy.max_entries(ChildList.TOKENS, Purpose.ISSUE)
        return cls(interval_ms, max(1, tokens // PILED_UP_FRACTION))

    def due(self, *, now_ms: int, last_ms: int, expired: int, near_capacity: Callable[[], bool]) -> SweepReason | None:
        """Why a sweep is due now (None: not yet). ``last_ms``: when the last sweep started (or leadership
        began); ``expired``: tokens past their expiry waiting; ``near_capacity`` is asked only when it matters."""
        since = now_ms - last_ms
        if since >= self.interval_ms:
            return SweepReason.INTERVAL
        if expired <= 0 or since < EARLY_GAP_MS:
            return None
        if expired >= self.threshold:
            return SweepReason.PILED_UP
        if near_capacity():
            return SweepReason.NEAR_CAPACITY
        return None

    def check_every_ms(self) -> int:
        return min(self.interval_ms, CHECK_EVERY_MS)
