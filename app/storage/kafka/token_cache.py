"""Every replica's in-memory copy of every token, fed by DescribeDelegationToken: read whole at start, then again
every ``cluster.cache.refresh.ms`` and when a caller needs the latest (a quota judged against another replica's
creates, a renew naming a token by an HMAC this replica has not seen). This replica's own writes are installed
as they are answered. Verify, describe and Bearer logins read only this cache, indexed as the ZooKeeper cache is
(app/storage/token_index.py).

A Bearer login or verify naming a token the cache lacks (made on another replica or with kafka-delegation-tokens.sh
an instant ago) triggers one refresh before it is refused; such refreshes are shared by concurrent callers and
run at most once per ``MISS_REFRESH_INTERVAL_S``, so unknown tokens cannot make kts hammer the brokers.

The cluster records kts's own principal as the requester of every token kts creates for its callers; the caller
who asked is looked up in ``TokenRequesters`` (the audit database, shared by replicas) and shown instead.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

from cachetools import TTLCache

from app.domain.errors import KtsError
from app.domain.principal import KafkaPrincipal
from app.domain.token_quota import QuotaKey
from app.domain.token_secret import TOKEN_ID_PATTERN, TokenSecret
from app.service.ports import StoredToken
from app.storage.indexed_token_cache import IndexedTokenCache
from app.storage.kafka.cluster import KafkaCluster
from app.storage.kafka.ports import RecentCreate, TokenRequesters
from app.storage.kafka.refresh_outage import RefreshOutage

log = logging.getLogger(__name__)
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)
MISS_REFRESH_INTERVAL_S = 1.0
UNKNOWN_REQUESTER_RECHECK_S = 30.0
OWN_WRITE_GRACE_S = 30.0  # how long this replica's write outranks snapshots that do not show it yet


class KafkaTokenCache(IndexedTokenCache):
    def __init__(
        self,
        cluster: KafkaCluster,
        secret: TokenSecret,
        requesters: TokenRequesters,
        *,
        interval_ms: int,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(secret)
        self._cluster = cluster
        self._requesters = requesters
        self._timer = timer
        self._outage = RefreshOutage("token cache", log)
        self._refreshing = threading.Lock()  # one refresh at a time; waiters share its outcome
        # This replica's own writes, kept over the snapshots until one shows them: a broker answers Describe from
        # its own copy of the metadata, which takes in a record a moment after the controller answered the write.
        self._written: dict[str, tuple[float, StoredToken | None]] = {}
        self._asked: dict[str, KafkaPrincipal] = {}  # who asked for the tokens kts made (from here or the audit)
        self._not_ours: TTLCache[str, bool] = TTLCache(maxsize=1_000_000, ttl=UNKNOWN_REQUESTER_RECHECK_S, timer=timer)
        self._unshown: list[RecentCreate] = []  # made on some replica, not described yet
        self._described: dict[str, float] = {}  # ids some snapshot showed lately (gone since: deleted, not lagging)
        self._deleted: dict[str, float] = {}  # ids this replica deleted lately
        self._last_refresh = float("-inf")
        self._poller = self._outage.poller("token-cache", self.refresh_all, interval_ms=interval_ms)
        self.refreshes = 0

    def start(self) -> None:
        self.refresh_all()
        self._poller.start()

    def stop(self) -> None:
        self._poller.stop()

    # --- reads (TokenView; the rest are IndexedTokenCache's) ---

    def lookup(self, token_id: str) -> StoredToken | None:
        """``get``, refreshing once (rate-limited, shared) when the token is not cached."""
        found = self._index.get(token_id)
        if found is None and _TOKEN_ID.fullmatch(token_id):
            self._refresh_missing(lambda: token_id in self._index)
            found = self._index.get(token_id)
        return found

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        """The cached tokens that count against ``key``, and those any replica made a moment ago that the
        brokers did not describe yet (``TokenRequesters.recent``): a quota never counts fewer than exist."""
        with self._lock:
            unshown = sum(1 for made in self._unshown if made.counts_against(key, now_ms))
            return self._index.live_count(key, now_ms) + unshown

    def refresh(self, token_id: str) -> None:
        self.refresh_all()

    def refresh_latest(self, token_id: str) -> None:
        """Read the cluster's tokens again (an authenticated caller named a token this replica lacks)."""
        if _TOKEN_ID.fullmatch(token_id):
            self.refresh_all()

    def catch_up(self) -> None:
        self.refresh_all()

    # --- this replica's writes ---

    def apply(self, stored: StoredToken) -> None:
        token = stored.token
        with self._lock:
            self._written[token.token_id] = (self._timer(), stored)
            if token.token_requester != self._cluster.principal:
                self._asked[token.token_id] = token.token_requester
            self._index.replace(stored)

    def discard(self, token_id: str) -> None:
        self.discard_many([token_id])

    def discard_many(self, token_ids: list[str]) -> None:
        with self._lock:
            for token_id in token_ids:
                self._written[token_id] = (self._timer(), None)
                self._deleted[token_id] = self._timer()
            self._index.drop_many(token_ids)

    # --- refreshing ---

    def refresh_all(self) -> None:
        """Read every token from the brokers and install them (StoreUnavailable when none answers)."""
        with self._refreshing:
            self._refresh()

    def _refresh_missing(self, found: Callable[[], bool]) -> None:
        started = self._timer()
        with self._refreshing:
            # Another caller's refresh that began after this miss answered it already; else at most one a second.
            if found() or self._last_refresh >= started or started - self._last_refresh < MISS_REFRESH_INTERVAL_S:
                return
            try:
                self._refresh()
            except KtsError as exc:
                self._outage.failed(exc.message)

    def _refresh(self) -> None:
        began = self._timer()
        # Read before the describe: a token recorded after it is described by it, or read at the next refresh.
        recent = self._recent()
        answered = self._cluster.tokens.describe()
        kts = self._cluster.principal
        asked = self._requesters_of([found.token for found in answered if found.token.token_requester == kts])
        snapshot = []
        for found in answered:
            token = found.token
            requester = asked.get(token.token_id)
            if requester is not None:
                token = type(token)(
                    token.token_id,
                    token.owner,
                    requester,
                    token.renewers,
                    token.issue_timestamp,
                    token.expiry_timestamp,
                    token.max_timestamp,
                )
            snapshot.append(StoredToken(token, 0))
        with self._lock:
            tokens = {stored.token.token_id: stored for stored in snapshot}
            pending: dict[str, tuple[float, StoredToken | None]] = {}
            for token_id, (written_at, state) in self._written.items():
                seen = tokens.get(token_id)
                shown = seen is None if state is None else seen is not None and seen.token == state.token
                if shown or began - written_at > OWN_WRITE_GRACE_S:
                    continue  # the brokers show it (or never will: what they show is the truth)
                pending[token_id] = (written_at, state)
                if state is None:
                    tokens.pop(token_id, None)
                else:
                    tokens[token_id] = state
            self._install(tokens)
            self._described = _lately(self._described, began)
            self._deleted = _lately(self._deleted, began)
            for stored in snapshot:
                self._described.setdefault(stored.token.token_id, began)
            # Counted until a broker describes it, unless shown before (then gone: deleted, not lagging) or deleted
            # by this replica.
            self._unshown = [
                made
                for made in recent
                if made.token_id not in tokens
                and made.token_id not in self._described
                and made.token_id not in self._deleted
            ]
            self._written = pending
            self._asked = {token_id: who for token_id, who in self._asked.items() if token_id in tokens}
        self._last_refresh = began
        self.refreshes += 1
        self.loaded = True

    def _install(self, tokens: dict[str, StoredToken]) -> None:
        """Make the index hold ``tokens``, touching only what changed: a refresh of many tokens of which few
        changed costs few HMACs and index updates (the first load sorts the id index once)."""
        if not len(self._index):
            self._index.load(tokens.values())
            return
        for token_id in [token_id for token_id in self._index.ids() if token_id not in tokens]:
            self._index.drop(token_id)
        for token_id, stored in tokens.items():
            current = self._index.get(token_id)
            if current is None or current.token != stored.token:
                self._index.replace(stored)

    def _recent(self) -> list[RecentCreate]:
        try:
            return list(self._requesters.recent(int(OWN_WRITE_GRACE_S * 1000)))
        except KtsError as exc:  # creates charged to a quota fail too while the database is away
            log.warning("tokens made a moment ago on other replicas not read: %s", exc.message)
            return []

    def _requesters_of(self, made_by_kts: list) -> dict[str, KafkaPrincipal]:  # type: ignore[type-arg]
        known = {token.token_id: self._asked[token.token_id] for token in made_by_kts if token.token_id in self._asked}
        unknown = [
            token.token_id
            for token in made_by_kts
            if token.token_id not in known and token.token_id not in self._not_ours
        ]
        if unknown:
            try:
                found = self._requesters.requesters(unknown)
            except KtsError as exc:
                log.warning("requesters of %d tokens not looked up: %s", len(unknown), exc.message)
                found = {}
            for token_id in unknown:
                if token_id in found:
                    known[token_id] = self._asked[token_id] = found[token_id]
                else:  # kts's own (its start-up probe), or its create's audit row not yet settled: ask again later
                    self._not_ours[token_id] = True
        return known


def _lately(seen: dict[str, float], now: float) -> dict[str, float]:
    """The entries of the last two grace periods (a recent record is at most one old)."""
    return {token_id: when for token_id, when in seen.items() if now - when <= 2 * OWN_WRITE_GRACE_S}
