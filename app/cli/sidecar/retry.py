"""How ``kts sidecar`` waits between failed attempts: tenacity's exponential backoff with "equal jitter".

Each delay is between half and all of the current ceiling (0.5 s, 1 s, 2 s, ... up to the cap), so many
sidecars restarting together do not hit the service in step, and none retries faster than half the
ceiling. A ``Retry-After`` from the service lengthens the delay, never past the cap.
"""

from __future__ import annotations

from tenacity import RetryCallState
from tenacity.wait import wait_base, wait_exponential, wait_random_exponential

INITIAL_S = 0.5
CAP_S = 30.0


def equal_jitter(initial_s: float = INITIAL_S, cap_s: float = CAP_S) -> wait_base:
    """Half the ceiling for sure plus up to the other half at random; the ceiling doubles up to ``cap_s``."""
    half = wait_exponential(multiplier=initial_s / 2, max=cap_s / 2)
    return half + wait_random_exponential(multiplier=initial_s / 2, max=cap_s / 2)


class AtLeastRetryAfter(wait_base):
    """``backoff``, or the failed attempt's ``retry_after_s`` when that is longer, capped at ``cap_s``."""

    def __init__(self, backoff: wait_base, cap_s: float = CAP_S) -> None:
        self.backoff = backoff
        self.cap_s = cap_s

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        failure = outcome.exception() if outcome is not None and outcome.failed else None
        hint = getattr(failure, "retry_after_s", None) or 0.0
        return min(self.cap_s, max(self.backoff(retry_state), hint))
