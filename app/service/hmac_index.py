"""Finding a token by its HMAC, as renew and expire requests identify it.

An HMAC cannot be turned back into a token id, so the index maps HMAC -> token id for every id it has
seen. Ids never change, so entries stay valid; on a miss only ids not yet indexed are hashed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from app.domain.token_secret import TokenSecret


class HmacIndex:
    def __init__(self, secret: TokenSecret) -> None:
        self._secret = secret
        self._by_hmac: dict[bytes, str] = {}
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def find(self, mac: bytes, current_ids: Callable[[], Iterable[str]]) -> str | None:
        with self._lock:
            token_id = self._by_hmac.get(mac)
        if token_id is not None:
            return token_id
        ids = list(current_ids())
        with self._lock:
            for candidate in ids:
                if candidate not in self._seen:
                    self._seen.add(candidate)
                    self._by_hmac[self._secret.hmac(candidate)] = candidate
            live = set(ids)
            # Forget deleted tokens so the index does not grow without bound.
            for gone in self._seen - live:
                self._seen.discard(gone)
                self._by_hmac.pop(self._secret.hmac(gone), None)
            return self._by_hmac.get(mac)
