"""When ``kts sidecar`` acts on its token. Pure: the caller gives the time.

- Renew when 80% of the time from now to the token's expiry has passed, so a renewal that fails has the
  remaining fifth of the period to be retried.
- Replace (create a new token) once 80% of the token's maximum lifetime has passed, because renewals
  cannot go past ``maxTimestamp``; or at the renewal point, when this client may not renew the token.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

RENEW_FRACTION = 0.8
DEFAULT_GRACE_MS = 60_000  # how long a replaced token stays valid, for readers of the old file


class Action(StrEnum):
    RENEW = "renew"
    REPLACE = "replace"


@dataclass(frozen=True, slots=True)
class TokenTimes:
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    at_ms: int


def next_step(now_ms: int, token: TokenTimes, *, renewable: bool, fraction: float = RENEW_FRACTION) -> Step:
    """What to do next with ``token`` and when (in the same clock as the token's timestamps)."""
    if token.expiry_timestamp <= now_ms:
        return Step(Action.REPLACE, now_ms)
    renew_at = now_ms + int((token.expiry_timestamp - now_ms) * fraction)
    replace_at = token.issue_timestamp + int((token.max_timestamp - token.issue_timestamp) * fraction)
    if not renewable:
        return Step(Action.REPLACE, max(now_ms, min(renew_at, replace_at)))
    if renew_at < replace_at:
        return Step(Action.RENEW, renew_at)
    return Step(Action.REPLACE, max(now_ms, replace_at))


def retirement_period_ms(now_ms: int, expiry_timestamp: int, grace_ms: int) -> int | None:
    """The ``expiryTimePeriodMs`` that ends a replaced token after ``grace_ms``, or None when it ends sooner
    by itself (expire with a period may also extend a token, which would be wrong here)."""
    remaining = expiry_timestamp - now_ms
    if remaining <= grace_ms:
        return None
    return max(0, grace_ms)


def server_clock_offset_ms(server_timestamp: int, sent_ms: int, received_ms: int) -> int:
    """How far the service's clock is ahead of ours, from a timestamp it set while answering a request."""
    return server_timestamp - (sent_ms + received_ms) // 2
