"""Every replica's in-memory copy of every token, kept as brokers keep theirs: loaded at start, then
refreshed from ``/delegation_token/token_changes`` (each notification names a token, which is re-read:
present -> refresh, absent or unreadable -> drop). Tokens written by brokers or other replicas appear.

Verify, describe and Bearer logins read only this cache, kept with its indexes in a ``TokenIndex``
(app/storage/token_index.py, shared with the Kafka-protocol backend's cache). It also counts tokens per requester
(the fair shares) and those past their end (the sweep's schedule).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from app.domain.token_secret import TOKEN_ID_PATTERN, TokenSecret
from app.service.ports import StoredToken
from app.storage.indexed_token_cache import IndexedTokenCache
from app.storage.token_index import TokenIndex
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.tombstones import Tombstones
from app.storage.zk.znodes import TokenChangeZNode

log = logging.getLogger(__name__)

_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)
# A read races a delete for milliseconds, not minutes: a tombstone older than this is no longer needed.
TOMBSTONE_SECONDS = 120.0


class TokenCache(IndexedTokenCache):
    def __init__(
        self,
        zk: ZkConnection,
        store: ZkTokenStore,
        secret: TokenSecret,
        *,
        timer: Callable[[], float] = time.monotonic,
        while_reloading: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        """``while_reloading``: entered around every load of every token, the first and those after a lost session
        (the composition root pauses the garbage collector meanwhile and freezes what was loaded)."""
        super().__init__(secret)
        self._zk = zk
        self._while_reloading = while_reloading
        self._store = store
        # A read that raced a newer change cannot undo it: states are installed only when their znode version is
        # newer than the cached one, and a token this replica saw deleted (a tombstone; ids are never reused) is
        # never put back.
        # Expired tombstones are dropped in amortized constant time per deletion, so a mass sweep that
        # forgets 100k tokens in a row stays linear; no size bound, lest one be dropped before its time.
        self._tombstones = Tombstones(TOMBSTONE_SECONDS, timer)
        self._follower = ChangeFollower(
            zk,
            [NotificationQueue(TokenChangeZNode.ROOT, self._on_change, handle_batch=self._on_changes)],
            self._reload,
            name="token-cache",
        )

    def start(self) -> None:
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def lookup(self, token_id: str) -> StoredToken | None:
        """``get``: the watches keep this cache current, so an unknown token is refused without asking."""
        return self._index.get(token_id)

    def refresh(self, token_id: str) -> None:
        """Re-read one token from ZooKeeper (after a notification)."""
        self.refresh_many([token_id])

    def refresh_latest(self, token_id: str) -> None:
        """Re-read one token as the ZooKeeper leader has it (a token another replica made a moment ago)."""
        self._zk.sync()
        self.refresh(token_id)

    def refresh_many(self, token_ids: list[str]) -> None:
        """Re-read several tokens with pipelined requests, then install what was read. Tokens this replica
        saw deleted are not read again: ids are never reused, so a deleted token stays deleted."""
        wanted = [
            token_id
            for token_id in dict.fromkeys(token_ids)
            if token_id not in self._tombstones and _TOKEN_ID.fullmatch(token_id)  # else it names no token
        ]
        found = self._store.get_many(wanted) if wanted else {}
        with self._lock:
            for stored in found.values():
                if stored is not None:
                    self._install(stored)
            self._forget([token_id for token_id, stored in found.items() if stored is None])

    def catch_up(self) -> None:
        self._follower.catch_up()

    def apply(self, stored: StoredToken) -> None:
        """Install a state this replica just wrote (no ZooKeeper read), unless a newer one is cached."""
        with self._lock:
            self._install(stored)

    def discard(self, token_id: str) -> None:
        """Forget a token this replica just deleted."""
        self.discard_many([token_id])

    def discard_many(self, token_ids: list[str]) -> None:
        """Forget tokens this replica just deleted (a sweep's batch)."""
        with self._lock:
            self._forget(token_ids)

    def _on_change(self, data: bytes) -> None:
        self.refresh(TokenChangeZNode.decode(data))

    def _on_changes(self, batch: list[bytes]) -> None:
        self.refresh_many([TokenChangeZNode.decode(data) for data in batch])

    def _install(self, stored: StoredToken) -> None:
        token_id = stored.token.token_id
        current = self._index.get(token_id)
        if token_id in self._tombstones or (current is not None and current.version >= stored.version):
            return
        self._index.replace(stored)

    def _forget(self, token_ids: list[str]) -> None:
        self._index.drop_many(token_ids)
        self._tombstones.add_many(token_ids)

    def _reload(self) -> None:
        # Listed under the lock, so that writes this replica installs meanwhile wait and are not undone.
        with self._while_reloading(), self._lock:
            # Each batch indexed as its reads come, while ZooKeeper answers the next ones; into an index of its own,
            # put in place once every batch is read: a load that fails midway leaves the cache as it was.
            index = TokenIndex(self._secret)
            loaded = index.load_batches(self._store.list_batches())
            self._tombstones.clear()
            self._index = index
        self.loaded = True
        log.info("token cache loaded %d tokens", loaded)
