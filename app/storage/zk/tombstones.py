"""The token ids a cache saw deleted, each kept for a while (a read that raced the delete cannot put it back).

A sweep forgets its tokens a batch at a time, so they are added so: a batch costs one dict update and one entry
in a queue of batches by deadline, where a ``TTLCache`` linked every id into its expiry list (about a second of
the sweeping replica's CPU per 100k tokens). Expired batches go at the next addition; until then an expired
tombstone still answers, which is harmless (token ids are never reused).

Not thread-safe for writes: the cache holds its lock around them (a lookup is a dict lookup).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator


class Tombstones:
    def __init__(self, ttl: float, timer: Callable[[], float]) -> None:
        self._ttl = ttl
        self._timer = timer
        self._until: dict[str, float] = {}  # each id's deadline, that of the last batch that held it
        self._batches: deque[tuple[float, list[str]]] = deque()  # in deadline order

    def __contains__(self, token_id: object) -> bool:
        return token_id in self._until

    def __len__(self) -> int:
        return len(self._until)

    def __iter__(self) -> Iterator[str]:
        return iter(self._until)

    def add_many(self, token_ids: Iterable[str]) -> None:
        now = self._timer()
        self._expire(now)
        ids = list(token_ids)
        if not ids:
            return
        until = now + self._ttl
        self._until.update(dict.fromkeys(ids, until))
        self._batches.append((until, ids))

    def clear(self) -> None:
        self._until.clear()
        self._batches.clear()

    def _expire(self, now: float) -> None:
        batches, until_of = self._batches, self._until
        while batches and batches[0][0] <= now:
            until, ids = batches.popleft()
            for token_id in ids:
                if until_of.get(token_id) == until:  # not tombstoned again since
                    del until_of[token_id]
