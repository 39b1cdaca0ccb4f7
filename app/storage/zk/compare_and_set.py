"""The one compare-and-set loop of every store: an attempt reads a znode with its version, decides its new
state, and writes that guarded by the version read (``ChangeTransaction.write``). When another writer got
there first (``ConcurrentModification``: a token renewed and expired on two replicas at once, a broker's quota
change to the same user config), the attempt is made again from a fresh read, after a jittered pause
("full jitter" exponential backoff, so racing replicas stop colliding in lockstep). After ``MAX_ATTEMPTS``
lost races the caller is told to retry.

Any other error (the decision refuses, the znode is gone for good, ZooKeeper is away) ends the loop at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

from app.domain.errors import ConcurrentModification
from app.storage.zk.errors import Subject

MAX_ATTEMPTS = 8
BACKOFF_S = 0.005  # the pause before attempt n+1 is uniform in [0, min(BACKOFF_S * 2**(n-1), MAX_BACKOFF_S))
MAX_BACKOFF_S = 0.04
R = TypeVar("R")

if TYPE_CHECKING:
    from tenacity import RetryCallState


def compare_and_set(
    attempt: Callable[[], R],
    subject: Subject,
    *,
    attempts: int = MAX_ATTEMPTS,
    retry_on: type[ConcurrentModification] = ConcurrentModification,
) -> R:
    """``retry_on``: the lost races worth another attempt (a narrower kind when some must end the loop)."""
    # Imported by the first write, not at start-up (some 4 ms of it, which no read and no readiness needs); once
    # imported, a dict lookup.
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

    def kept_changing(_: RetryCallState) -> NoReturn:
        raise ConcurrentModification(f"{subject.name} kept changing under concurrent requests; retry.")

    retrying = Retrying(
        retry=retry_if_exception_type(retry_on),
        stop=stop_after_attempt(attempts),
        wait=wait_random_exponential(multiplier=BACKOFF_S, max=MAX_BACKOFF_S),
        retry_error_callback=kept_changing,
    )
    return retrying(attempt)
