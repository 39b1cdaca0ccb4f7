"""Every replica's in-memory copy of every token, kept as brokers keep theirs: loaded at start, then
refreshed from ``/delegation_token/token_changes`` (each notification names a token, which is re-read:
present -> refresh, absent or unreadable -> drop). Tokens written by brokers or other replicas appear.

Verify, describe and Bearer logins read only this cache. Indexes keep them fast: by HMAC (renew and expire
name tokens by HMAC); by owner, by renewer and by requester (describe with an owner filter or for a caller
who sees only the tokens they hold, and the quota counts); and every token id in order (a listing pages by
token id, so a page costs its own length, not a sort of every token). Two counts serve the fair shares and the
sweep's schedule: tokens per requester, and every token's end (the earlier of its expiry and maximum) in order,
so "how many have expired" is a bisection.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from itertools import islice

from cachetools import TTLCache
from sortedcontainers import SortedList

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind, counts_against
from app.domain.token_secret import TOKEN_ID_PATTERN, TokenSecret
from app.service.ports import StoredToken
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import TokenChangeZNode

log = logging.getLogger(__name__)

_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)
# A read races a delete for milliseconds, not minutes: a tombstone older than this is no longer needed.
TOMBSTONE_SECONDS = 120.0


class _PrincipalIndex:
    """Token ids by one principal field of their tokens."""

    def __init__(self, field: Callable[[TokenInformation], Iterable[KafkaPrincipal]]) -> None:
        self._field = field
        self._ids: defaultdict[KafkaPrincipal, set[str]] = defaultdict(set)

    def get(self, principal: KafkaPrincipal) -> set[str]:
        return self._ids.get(principal, set())

    def add(self, token: TokenInformation) -> None:
        for principal in self._field(token):
            self._ids[principal].add(token.token_id)

    def remove(self, token: TokenInformation) -> None:
        for principal in self._field(token):
            ids = self._ids.get(principal)
            if ids is not None:
                ids.discard(token.token_id)
                if not ids:
                    del self._ids[principal]

    def clear(self) -> None:
        self._ids.clear()


class TokenCache:
    def __init__(
        self, zk: ZkConnection, store: ZkTokenStore, secret: TokenSecret, *, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self._zk = zk
        self._store = store
        self._secret = secret
        self._tokens: dict[str, StoredToken] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._by_owner = _PrincipalIndex(lambda token: (token.owner,))
        self._by_renewer = _PrincipalIndex(lambda token: token.renewers)
        # Only tokens requested for another owner: the owner index holds the rest (and memory is per token).
        self._by_requester = _PrincipalIndex(
            lambda token: (token.token_requester,) if token.token_requester != token.owner else ()
        )
        self._indexes = (self._by_owner, self._by_renewer, self._by_requester)
        self._ordered: SortedList = SortedList()  # every token id
        self._ends: SortedList = SortedList()  # every token's end (min of expiry and max), repeated as need be
        self._requested: Counter[KafkaPrincipal] = Counter()  # tokens per requester
        # The lock guards the dicts only; ZooKeeper is read outside it. A read that raced a newer change
        # cannot undo it: states are installed only when their znode version is newer than the cached one,
        # and a token this replica saw deleted (a tombstone; ids are never reused) is never put back.
        # Single-key reads need no lock (dict lookups are atomic).
        self._lock = threading.Lock()
        # Expired tombstones are dropped in amortized constant time per deletion, so a mass sweep that
        # forgets 100k tokens in a row stays linear; no size bound, lest one be dropped before its time.
        self._tombstones: TTLCache[str, bool] = TTLCache(maxsize=math.inf, ttl=TOMBSTONE_SECONDS, timer=timer)
        self.loaded = False
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

    def __len__(self) -> int:
        return len(self._tokens)

    def get(self, token_id: str) -> StoredToken | None:
        return self._tokens.get(token_id)

    def find_by_hmac(self, mac: bytes) -> str | None:
        return self._by_hmac.get(mac)

    def tokens(self) -> list[StoredToken]:
        with self._lock:
            return list(self._tokens.values())

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]:
        """Tokens that any of ``principals`` owns, renews or requested."""
        with self._lock:
            ids = set().union(*(index.get(principal) for principal in principals for index in self._indexes))
            return [self._tokens[token_id] for token_id in ids]

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        """Up to ``count`` tokens in token id order, from the first whose id is greater than ``token_id``."""
        with self._lock:
            ids = self._ordered.irange(minimum=token_id, inclusive=(False, True))
            return [self._tokens[found] for found in islice(ids, count)]

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        """Tokens counted against ``key``'s quota at ``now_ms``: expired ones never count, swept or not."""
        index = self._by_owner if key.kind is QuotaKind.OWNER else self._by_requester
        with self._lock:
            ids = index.get(key.principal)
            return sum(counts_against(key, self._tokens[token_id].token, now_ms) for token_id in ids)

    def requested_count(self, principal: KafkaPrincipal) -> int:
        """Tokens ``principal`` requested (for itself or others), expired ones included."""
        return self._requested.get(principal, 0)

    def expired_count(self, now_ms: int) -> int:
        """Tokens past their expiry or maximum (``TokenInformation.is_expired``): those whose end is before now."""
        with self._lock:
            return int(self._ends.bisect_left(now_ms))

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
            for token_id, stored in found.items():
                if stored is None:
                    self._forget(token_id)
                else:
                    self._install(stored)

    def catch_up(self) -> None:
        self._follower.catch_up()

    def apply(self, stored: StoredToken) -> None:
        """Install a state this replica just wrote (no ZooKeeper read), unless a newer one is cached."""
        with self._lock:
            self._install(stored)

    def discard(self, token_id: str) -> None:
        """Forget a token this replica just deleted."""
        with self._lock:
            self._forget(token_id)

    def _on_change(self, data: bytes) -> None:
        self.refresh(TokenChangeZNode.decode(data))

    def _on_changes(self, batch: list[bytes]) -> None:
        self.refresh_many([TokenChangeZNode.decode(data) for data in batch])

    def _install(self, stored: StoredToken) -> None:
        token_id = stored.token.token_id
        current = self._tokens.get(token_id)
        if token_id in self._tombstones or (current is not None and current.version >= stored.version):
            return
        self._drop(token_id)
        self._put(stored)

    def _forget(self, token_id: str) -> None:
        self._drop(token_id)
        self._tombstones[token_id] = True

    def _reload(self) -> None:
        # Listed under the lock, so that writes this replica installs meanwhile wait and are not undone.
        with self._lock:
            loaded = self._store.list()
            self._tombstones.clear()
            self._tokens.clear()
            self._by_hmac.clear()
            self._ordered.clear()
            self._ends.clear()
            self._requested.clear()
            for index in self._indexes:
                index.clear()
            for stored in loaded:
                self._put(stored, ordered=False)
            self._ordered.update(self._tokens)  # one sort: several times faster than an insertion each
            self._ends.update(_end(stored.token) for stored in loaded)
        self.loaded = True
        log.info("token cache loaded %d tokens", len(loaded))

    def _put(self, stored: StoredToken, *, ordered: bool = True) -> None:
        token = stored.token
        self._tokens[token.token_id] = stored
        self._by_hmac[self._secret.hmac(token.token_id)] = token.token_id
        if ordered:
            self._ordered.add(token.token_id)
            self._ends.add(_end(token))
        self._requested[token.token_requester] += 1
        for index in self._indexes:
            index.add(token)

    def _drop(self, token_id: str) -> None:
        old = self._tokens.pop(token_id, None)
        if old is None:
            return
        self._by_hmac.pop(self._secret.hmac(token_id), None)
        self._ordered.discard(token_id)
        self._ends.discard(_end(old.token))  # one of the equal ends: which one does not matter to a count
        requester = old.token.token_requester
        self._requested[requester] -= 1
        if self._requested[requester] <= 0:
            del self._requested[requester]
        for index in self._indexes:
            index.remove(old.token)


def _end(token: TokenInformation) -> int:
    """The instant after which the token is expired (``is_expired``: strictly past it)."""
    return min(token.expiry_timestamp, token.max_timestamp)
