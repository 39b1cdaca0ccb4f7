"""Tokens held in this process: the ``TokenStore`` and the ``TokenView`` of app/service/ports.py over one
``TokenIndex`` (app/storage/token_index.py, the index the ZooKeeper and Kafka-protocol caches keep).

The store is the view's source, so the view never lags: ``refresh``, ``catch_up``, ``apply`` and ``discard`` have
nothing to take in. Writes are compare-and-set as ZooKeeper's are: a change reads the token, lets ``decide`` answer
without holding the lock (``decide`` may take its time, or even write through the store), then writes only if the
version it read is still the stored one, and reads and decides again otherwise. kts picks the token ids, as a
broker does. Quota guards are versions in memory, guarded the same way. Its backend admits every write
(``OPEN_ADMISSION``: no child lists to guard), so no admission charge ever comes with a write, and none is kept.
A write marks its ``intent`` (the pending audit event's id) in the ``MemoryIntentStore`` it is given, under the
same lock as the write, as ZooKeeper creates its marker in the change's transaction: a mark exists if and only if
the change was made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from app.domain.errors import ConcurrentModification, TokenNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey
from app.domain.token_secret import TokenSecret, new_token_id
from app.service.ports import PLAIN_CREATE, CreateTerms, StoredToken, TokenChange
from app.storage.memory.intents import MemoryIntentStore
from app.storage.token_index import TokenIndex

R = TypeVar("R")
# As many rounds as a ZooKeeper compare-and-set gets (app/storage/zk/compare_and_set.py), and a quota-guarded one.
MAX_ATTEMPTS = 8
QUOTA_ATTEMPTS = 32


class MemoryTokenStore:
    """``TokenStore``: the tokens themselves."""

    def __init__(self, secret: TokenSecret, intents: MemoryIntentStore | None = None) -> None:
        self._intents = intents if intents is not None else MemoryIntentStore()
        self._lock = threading.RLock()
        self._index = TokenIndex(secret)
        self._guards: dict[QuotaKey, int] = {}

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def index(self) -> TokenIndex:
        return self._index

    def next_token_id(self) -> str:
        return new_token_id()

    def get(self, token_id: str) -> StoredToken | None:
        with self._lock:
            return self._index.get(token_id)

    def get_many(
        self, token_ids: list[str], known: Mapping[str, StoredToken] | None = None
    ) -> dict[str, StoredToken | None]:
        with self._lock:
            return {token_id: self._index.get(token_id) for token_id in token_ids}

    def create(self, token: TokenInformation, terms: CreateTerms = PLAIN_CREATE) -> StoredToken:
        intent, quotas, admit = terms.intent, terms.quotas, terms.admit  # no admission charge: nothing to guard
        for _ in range(QUOTA_ATTEMPTS):
            with self._lock:
                versions = {key: self._guards.get(key, 0) for key in quotas}
            if admit is not None:
                admit(versions)  # outside the lock: it reads the view, and may take its time
            with self._lock:
                if any(self._guards.get(key, 0) != version for key, version in versions.items()):
                    continue  # a create charged to the same quota came first: admit again
                if token.token_id in self._index:
                    raise ConcurrentModification(f"Token {token.token_id} exists already.")
                stored = StoredToken(token, 0)
                self._index.put(stored)
                for key in quotas:
                    self._guards[key] = versions[key] + 1
                self._intents.marked(intent)
                return stored
        raise ConcurrentModification(f"Token {token.token_id}: the quota kept changing; try again.")

    def change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[R]], intent: object = None
    ) -> tuple[StoredToken | None, R]:
        for _ in range(MAX_ATTEMPTS):
            stored = self.get(token_id)
            if stored is None:
                raise TokenNotFound(f"Token {token_id} does not exist.")
            change = decide(stored)  # outside the lock: what it raises ends the change
            with self._lock:
                current = self._index.get(token_id)
                if current is None:
                    raise TokenNotFound(f"Token {token_id} no longer exists.")
                if current.version != stored.version:
                    continue
                written = None if change.token is None else StoredToken(change.token, stored.version + 1)
                if written is None:
                    self._index.drop(token_id)
                else:
                    self._index.replace(written)
                self._intents.marked(intent)
                return written, change.result
        raise ConcurrentModification(f"Token {token_id} kept changing; try again.")

    def delete_many(self, deletions: Sequence[tuple[str, int, object]], charges: Sequence[object] = ()) -> None:
        with self._lock:
            for token_id, version, _ in deletions:
                current = self._index.get(token_id)
                if current is None:
                    raise TokenNotFound(f"Token {token_id} no longer exists.")
                if current.version != version:
                    raise ConcurrentModification(f"Token {token_id} changed meanwhile.")
            for token_id, _, intent in deletions:
                self._index.drop(token_id)
                self._intents.marked(intent)

    def list(self) -> list[StoredToken]:
        with self._lock:
            return self._index.tokens()


class MemoryTokenView:
    """``TokenView`` of the store's own tokens: there is no other replica, so nothing to catch up with."""

    def __init__(self, store: MemoryTokenStore) -> None:
        self._store = store

    def get(self, token_id: str) -> StoredToken | None:
        return self._store.get(token_id)

    def lookup(self, token_id: str) -> StoredToken | None:
        return self._store.get(token_id)

    def find_by_hmac(self, mac: bytes) -> str | None:
        with self._store.lock:
            return self._store.index.find_by_hmac(mac)

    def tokens(self) -> list[StoredToken]:
        return self._store.list()

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]:
        with self._store.lock:
            return self._store.index.related_to(principals)

    def related_tokens(self, principals: Iterable[KafkaPrincipal]) -> list[TokenInformation]:
        with self._store.lock:
            return self._store.index.related_tokens(principals)

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        with self._store.lock:
            return self._store.index.after(token_id, count)

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        with self._store.lock:
            return self._store.index.live_count(key, now_ms)

    def requested_count(self, principal: KafkaPrincipal) -> int:
        with self._store.lock:
            return self._store.index.requested_count(principal)

    def expired_count(self, now_ms: int) -> int:
        with self._store.lock:
            return self._store.index.expired_count(now_ms)

    def refresh(self, token_id: str) -> None:
        pass  # the store is the view's source

    def refresh_latest(self, token_id: str) -> None:
        pass

    def catch_up(self) -> None:
        pass

    def apply(self, stored: StoredToken) -> None:
        pass  # the store put it in already, at the version it wrote

    def discard(self, token_id: str) -> None:
        pass

    def discard_many(self, token_ids: list[str]) -> None:
        pass
