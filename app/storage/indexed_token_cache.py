"""The reads every replica's token cache answers from its ``TokenIndex`` (app/storage/token_index.py), whichever
backend feeds it: the ZooKeeper watch cache (app/storage/zk/token_cache.py) and the Kafka-protocol cache fed by
DescribeDelegationToken (app/storage/kafka/token_cache.py). A cache subclasses it and says how it is fed (loads,
refreshes, this replica's own writes) and how it looks up a token it lacks.

The lock guards the index: writes and multi-key reads hold it; single-key reads need none (dict lookups are
atomic). The cluster is asked outside it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey
from app.domain.token_secret import TokenSecret
from app.service.ports import StoredToken
from app.storage.token_index import TokenIndex


class IndexedTokenCache:
    def __init__(self, secret: TokenSecret) -> None:
        self._secret = secret
        self._index = TokenIndex(secret)
        self._lock = threading.Lock()
        self.loaded = False

    def __len__(self) -> int:
        return len(self._index)

    def get(self, token_id: str) -> StoredToken | None:
        return self._index.get(token_id)

    def find_by_hmac(self, mac: bytes) -> str | None:
        index = self._index
        if not index.hmacs_indexed:
            # The first lookup after a load indexes every token (app/storage/token_index.py). The HMACs are computed
            # outside the lock, which is held only to take the ids and to put the entries in: the replica's other
            # requests do not wait for 100k HMAC-SHA512s.
            with self._lock:
                ids = index.ids()
            computed = dict(zip(ids, self._secret.hmacs(ids), strict=True))
            with self._lock:
                index.index_hmacs(computed)
        return index.find_by_hmac(mac)

    def tokens(self) -> list[StoredToken]:
        with self._lock:
            return self._index.tokens()

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]:
        """Tokens that any of ``principals`` owns, renews or requested."""
        with self._lock:
            return self._index.related_to(principals)

    def related_tokens(self, principals: Iterable[KafkaPrincipal]) -> list[TokenInformation]:
        with self._lock:
            return self._index.related_tokens(principals)

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        """Up to ``count`` tokens in token id order, from the first whose id is greater than ``token_id``."""
        with self._lock:
            return self._index.after(token_id, count)

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        """Tokens counted against ``key``'s quota at ``now_ms``: expired ones never count, swept or not."""
        with self._lock:
            return self._index.live_count(key, now_ms)

    def requested_count(self, principal: KafkaPrincipal) -> int:
        """Tokens ``principal`` requested (for itself or others), expired ones included."""
        return self._index.requested_count(principal)

    def expired_count(self, now_ms: int) -> int:
        """Tokens past their expiry or maximum, not swept yet."""
        with self._lock:
            return self._index.expired_count(now_ms)
