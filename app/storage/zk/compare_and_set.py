"""The one compare-and-set loop of every store: an attempt reads a znode with its version, decides its new
state, and writes that guarded by the version read (``ChangeTransaction.write``). When another writer got
there first (``ConcurrentModification``: a token renewed and expired on two replicas at once, a broker's quota
change to the same user config), the attempt is made again from a fresh read, after a short jittered pause
so racing replicas stop colliding in lockstep. After ``MAX_ATTEMPTS`` lost races the caller is told to retry.

Any other error (the decision refuses, the znode is gone for good, ZooKeeper is away) ends the loop at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from app.domain.errors import ConcurrentModification
from app.storage.zk.errors import Subject

MAX_ATTEMPTS = 8
BACKOFF_S = 0.005  # the pause before attempt n is uniform in [0, n * BACKOFF_S)
R = TypeVar("R")


def compare_and_set(attempt: Callable[[], R], subject: Subject) -> R:
    for attempt_number in range(MAX_ATTEMPTS):
        if attempt_number:
            time.sleep(random.uniform(0, BACKOFF_S * attempt_number))  # noqa: S311 - jitter, not security
        try:
            return attempt()
        except ConcurrentModification:
            continue
    raise ConcurrentModification(f"{subject.name} kept changing under concurrent requests; retry.")
