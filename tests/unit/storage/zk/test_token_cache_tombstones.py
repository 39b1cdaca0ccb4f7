"""Tombstones of deleted tokens are pruned in amortized linear time: a mass sweep forgets 100k tokens in a
row, and pruning on every deletion once the set is large made that quadratic."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.token_secret import TokenSecret
from app.storage.zk import token_cache
from app.storage.zk.token_cache import TokenCache


def test_pruning_checks_stay_logarithmic_in_a_long_run_of_deletions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_cache, "TOMBSTONES_CHECKED_AT", 10)
    cache = TokenCache(zk=_Unused(), store=_Unused(), secret=TokenSecret("s"))  # type: ignore[arg-type]
    cache._prune_tombstones_at = 10
    prunes = 0
    for n in range(5_000):
        before = cache._tombstones
        cache.discard(f"token{n}")
        prunes += cache._tombstones is not before  # a prune builds a new dict
    # every tombstone is recent, so each prune keeps them all and the next waits for twice as many
    assert prunes <= 12
    assert len(cache._tombstones) == 5_000


class _Unused:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"not used by this test: {name}")
