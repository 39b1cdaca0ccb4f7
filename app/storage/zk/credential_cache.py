"""Users' SCRAM credentials as this replica last read them, kept as a broker keeps its credential cache: a change
to a user's config is announced under ``/config/changes`` (kafka-configs.sh writes one notification per change,
and so does kts), and each notification naming a user makes this replica forget what it read for that user.

Without it every Basic login read the caller's ``/config/users`` znode, a ZooKeeper round trip (and a JSON and
base64 decoding) on every request. A user is read once, then answered from memory until a notification names
them, their credential is written through this replica, or the session is lost (when notifications may have been
missed: everything is forgotten).

What is remembered is what ZooKeeper said at the time of a read that no forgetting overtook: a read that began
before a notification was handled is not kept (a generation count, bumped by every forgetting, tells), so a slow
read cannot put back a credential changed meanwhile. A user without credentials is not remembered: such a read is
what a guessed user name costs anyway, and a user added by hand without a notification is found at the next
login. While the session is not connected, nothing is answered from memory: a credential changed meanwhile would
go unnoticed until the notification is read, so logins read ZooKeeper (and fail with it) as before.
"""

from __future__ import annotations

import logging
import threading

from cachetools import LRUCache

from app.domain.credentials import Mechanism, ScramCredential
from app.storage.zk.change_follower import ChangeFollower, NotificationQueue
from app.storage.zk.connection import ZkConnection
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import ConfigChangeZNode, MalformedZNode

log = logging.getLogger(__name__)

MAX_USERS = 10_000  # the least recently used users are read again past this many

Credentials = dict[Mechanism, ScramCredential]


class CredentialCache:
    def __init__(self, zk: ZkConnection, store: ZkUserStore, *, max_users: int = MAX_USERS) -> None:
        self._zk = zk
        self._store = store
        self._users: LRUCache[str, Credentials] = LRUCache(maxsize=max_users)
        self._lock = threading.Lock()  # cachetools caches are not thread-safe
        self._generation = 0  # bumped by every forgetting
        self._follower = ChangeFollower(
            zk,
            [NotificationQueue(ConfigChangeZNode.ROOT, self._on_change, handle_batch=self._on_changes)],
            self.forget_all,
            name="credential-cache",
        )
        store.on_written(self.forget)  # this replica's own writes: read again at once

    def start(self) -> None:
        self._follower.start()

    def stop(self) -> None:
        self._follower.stop()

    def __len__(self) -> int:
        return len(self._users)

    def credentials(self, user_name: str) -> Credentials:
        """The user's well-formed SCRAM credentials (none: no such user, or none usable)."""
        if not self._zk.connected:
            return self._store.credentials(user_name)  # raises StoreUnavailable: see the module docstring
        with self._lock:
            found = self._users.get(user_name)
            generation = self._generation
        if found is not None:
            return found
        found = self._store.credentials(user_name)
        if found:
            with self._lock:
                if generation == self._generation:  # no change was announced while reading
                    self._users[user_name] = found
        return found

    def forget(self, user_name: str) -> None:
        with self._lock:
            self._generation += 1
            self._users.pop(user_name, None)

    def forget_all(self) -> None:
        with self._lock:
            self._generation += 1
            self._users.clear()

    def _on_change(self, data: bytes) -> None:
        self._on_changes([data])

    def _on_changes(self, batch: list[bytes]) -> None:
        for data in batch:
            try:
                user = ConfigChangeZNode.changed_user(data)
            except MalformedZNode as exc:  # which user changed is unknown: any may have
                log.warning("unreadable config change notification (%s): every cached credential is read again", exc)
                self.forget_all()
                continue
            if user is not None:
                self.forget(user)
