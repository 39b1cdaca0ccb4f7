"""Every replica's in-memory copy of every token, kept as brokers keep theirs: loaded at start, then
refreshed from ``/delegation_token/token_changes`` (each notification names a token, which is re-read:
present -> refresh, absent or unreadable -> drop). Tokens written by brokers or other replicas appear.

Verify, describe and Bearer logins read only this cache. Indexes by HMAC (renew and expire name tokens
by HMAC) and by principal (owner, renewer, requester: describe with an owner filter) keep them fast.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterable

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.ports import StoredToken
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.connection import ZkConnection
from app.storage.zk.paths import TOKEN_CHANGES
from app.storage.zk.token_store import ZkTokenStore

log = logging.getLogger(__name__)

# Java ZooKeeper clients (brokers, kafka-delegation-tokens.sh) refuse a response larger than jute.maxbuffer
# (1 MB unless raised); kazoo reads it regardless, so kts keeps working but brokers would not.
JAVA_CLIENT_MAX_RESPONSE = 0xFFFFF


def _principals(token: TokenInformation) -> set[KafkaPrincipal]:
    return {token.owner, token.token_requester, *token.renewers}


class TokenCache:
    def __init__(self, zk: ZkConnection, store: ZkTokenStore, secret: TokenSecret) -> None:
        self._store = store
        self._secret = secret
        self._tokens: dict[str, StoredToken] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._by_principal: defaultdict[KafkaPrincipal, set[str]] = defaultdict(set)
        # Writers (refreshes, reloads) take the lock and run one at a time, so a slow read that began
        # before a newer change never overwrites it. Single-key reads need no lock (dict lookups are atomic).
        self._lock = threading.Lock()
        self.loaded = False
        self._follower = ChangeFollower(
            zk, [NotificationQueue(TOKEN_CHANGES, self._on_change)], self._reload, name="token-cache"
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
            ids = set().union(*(self._by_principal.get(principal, ()) for principal in principals))
            return [self._tokens[token_id] for token_id in ids]

    def refresh(self, token_id: str) -> None:
        """Re-read one token from ZooKeeper (after a notification, or after this replica's own write)."""
        with self._lock:
            stored = self._store.get(token_id)
            self._drop(token_id)
            if stored is not None:
                self._put(stored)

    def apply(self, stored: StoredToken) -> None:
        """Install a state this replica just wrote (no ZooKeeper read), unless a newer one is cached."""
        with self._lock:
            current = self._tokens.get(stored.token.token_id)
            if current is None or current.version < stored.version:
                self._drop(stored.token.token_id)
                self._put(stored)

    def discard(self, token_id: str) -> None:
        """Forget a token this replica just deleted."""
        with self._lock:
            self._drop(token_id)

    def _on_change(self, data: bytes) -> None:
        self.refresh(data.decode("utf-8", errors="replace"))

    def _reload(self) -> None:
        # Listed under the lock, like a refresh, so a write this replica refreshes meanwhile is not undone.
        with self._lock:
            loaded = self._store.list()
            self._tokens.clear()
            self._by_hmac.clear()
            self._by_principal.clear()
            for stored in loaded:
                self._put(stored)
        self.loaded = True
        log.info("token cache loaded %d tokens", len(loaded))
        listing = sum(len(stored.token.token_id) + 4 for stored in loaded)
        if listing > JAVA_CLIENT_MAX_RESPONSE * 0.8:
            log.warning(
                "the children of /delegation_token/tokens take %d bytes, near or past the 1 MB that Java "
                "ZooKeeper clients accept: start brokers (and ZooKeeper) with -Djute.maxbuffer=4194304 or more, "
                "or brokers will fail to load tokens",
                listing,
            )

    def _put(self, stored: StoredToken) -> None:
        token = stored.token
        self._tokens[token.token_id] = stored
        self._by_hmac[self._secret.hmac(token.token_id)] = token.token_id
        for principal in _principals(token):
            self._by_principal[principal].add(token.token_id)

    def _drop(self, token_id: str) -> None:
        old = self._tokens.pop(token_id, None)
        if old is None:
            return
        self._by_hmac.pop(self._secret.hmac(token_id), None)
        for principal in _principals(old.token):
            ids = self._by_principal.get(principal)
            if ids is not None:
                ids.discard(token_id)
                if not ids:
                    del self._by_principal[principal]
