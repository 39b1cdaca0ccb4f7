"""The one compare-and-set loop: a lost race is attempted again from a fresh read, anything else ends it."""

from __future__ import annotations

import pytest

from app.domain.errors import ConcurrentModification, StoreUnavailable, TokenExpired
from app.storage.zk.compare_and_set import MAX_ATTEMPTS, compare_and_set
from app.storage.zk.errors import Subject

SUBJECT = Subject("Token abc", "token")


class Attempts:
    """An attempt that loses ``losses`` races, then answers how many attempts it took."""

    def __init__(self, losses: int, then: Exception | None = None) -> None:
        self.losses = losses
        self.then = then
        self.made = 0

    def __call__(self) -> int:
        self.made += 1
        if self.made <= self.losses:
            raise ConcurrentModification("Token abc changed while this request was being handled.")
        if self.then is not None:
            raise self.then
        return self.made


def test_a_first_attempt_that_wins_is_the_only_one() -> None:
    attempts = Attempts(losses=0)
    assert compare_and_set(attempts, SUBJECT) == 1


def test_lost_races_are_attempted_again_until_one_wins() -> None:
    attempts = Attempts(losses=MAX_ATTEMPTS - 1)
    assert compare_and_set(attempts, SUBJECT) == MAX_ATTEMPTS


def test_after_max_attempts_lost_races_the_caller_is_told_to_retry() -> None:
    attempts = Attempts(losses=MAX_ATTEMPTS)
    with pytest.raises(ConcurrentModification) as refused:
        compare_and_set(attempts, SUBJECT)
    assert refused.value.message == "Token abc kept changing under concurrent requests; retry."
    assert attempts.made == MAX_ATTEMPTS


@pytest.mark.parametrize("error", [TokenExpired("expired"), StoreUnavailable("away")])
def test_any_other_error_ends_the_loop_at_once(error: Exception) -> None:
    attempts = Attempts(losses=1, then=error)
    with pytest.raises(type(error)):
        compare_and_set(attempts, SUBJECT)
    assert attempts.made == 2
