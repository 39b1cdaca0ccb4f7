"""The token znodes and their change notifications as the dual-write bridge sees them (app/storage/zk/token_bridge.py,
app/domain/token_bridge.py say why and when), and the one thing the bridge writes: a change notification exactly as
a broker writes it (``/delegation_token/token_changes/token_change_<seq>`` holding the token id).

A look reads only what changed since the previous one: ZooKeeper watches on the token list, on each token znode (a
data watch, left by reading it, so a deleted token leaves none behind) and on the notification list mark what to
read again and wake the bridge. Notification names never change their data, so each is read once. Every
``FULL_LOOK_S`` and after a lost session everything is read again, in case a watch was lost.

The notification is written without the write fence (transaction.py): the fence refuses every write once a KRaft
controller has claimed the cluster, to keep kts's tokens from being deleted, while a notification is no metadata the
controller owns, copies or deletes (it writes none itself) and is what the brokers still in ZooKeeper mode need.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState, WatchedEvent, ZnodeStat

from app.domain.errors import KtsError
from app.domain.token import TokenInformation
from app.domain.token_bridge import TokenVersion
from app.storage.zk.children_list import list_children_async
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject, refused_read, refused_write
from app.storage.zk.znodes import ControllerEpochZNode, MalformedZNode, MigrationZNode, TokenChangeZNode, TokenZNode

FULL_LOOK_S: Final = 60.0
PREFIX_NAME: Final = TokenChangeZNode.PREFIX.rsplit("/", 1)[1]  # token_change_


@dataclass(frozen=True, slots=True)
class TokenLook:
    tokens: dict[str, TokenVersion]  # every token znode now
    notified: dict[str, int]  # token id -> greatest creation zxid of the notifications naming it
    cutoff_zxid: int  # the creation of /migration (else the last claim): changes before it are not bridged
    listed_zxid: int  # the pzxid of /delegation_token/tokens read after the tokens: deletions seen came at or before it


@dataclass
class _Marks:
    """What the watches marked since the last look (kazoo's event thread writes, the bridge's thread reads)."""

    full: bool = True
    tokens_listed: bool = False  # the token list changed
    dirty: set[str] = field(default_factory=set)  # token znodes changed or deleted


class ZkTokenChanges:
    def __init__(self, zk: ZkConnection, *, full_look_s: float = FULL_LOOK_S) -> None:
        self._zk = zk
        self._full_look_s = full_look_s
        self._lock = threading.Lock()
        self._marks = _Marks()
        self._wake = threading.Event()
        self._tokens: dict[str, TokenVersion] = {}
        self._notifications: dict[str, tuple[str, int]] = {}  # name -> (token id, czxid)
        self._last_full = 0.0
        self._listening = False

    def look(self) -> TokenLook:
        """The token znodes and notifications as ZooKeeper has them now (after a sync), leaving the watches that
        wake ``wait`` at the next change."""
        zk = self._zk
        if not self._listening:
            zk.client.add_listener(self._on_session)
            self._listening = True
        zk.sync()
        with self._lock:
            marks, self._marks = self._marks, _Marks(full=False)
            self._wake.clear()
        if marks.full or time.monotonic() - self._last_full >= self._full_look_s:
            self._last_full = time.monotonic()
            self._tokens = {}
            marks.tokens_listed = True
            self._notifications = {}
        try:
            if marks.tokens_listed:
                listed = set(self._list(TokenZNode.ROOT, self._on_token_list))
                marks.dirty |= listed - self._tokens.keys()
                marks.dirty |= self._tokens.keys() - listed
            self._read_tokens(sorted(marks.dirty))
            listed_zxid = self._pzxid(TokenZNode.ROOT)
            notified = self._read_notifications()
            cutoff = self._cutoff()
        except BaseException:
            with self._lock:  # read it all again at the next look
                self._marks.full = True
            raise
        return TokenLook(dict(self._tokens), notified, cutoff, listed_zxid)

    def wait(self, timeout_s: float) -> bool:
        """Until a watch marks a change (True) or ``timeout_s`` passes."""
        return self._wake.wait(timeout_s)

    def reset(self) -> None:
        """Forget what was read (the bridge stopped): the next look reads everything."""
        with self._lock:
            self._marks = _Marks()
        self._tokens = {}
        self._notifications = {}
        if self._listening:
            self._zk.client.remove_listener(self._on_session)
            self._listening = False

    def notify(self, token_id: str) -> None:
        """Write the change notification a broker writes after changing or deleting ``token_id``'s znode."""
        zk = self._zk
        zk.ensure_connected()
        try:
            zk.wait(
                zk.client.create_async(
                    TokenChangeZNode.PREFIX,
                    TokenChangeZNode.encode(token_id),
                    acl=zk.acl_for(TokenChangeZNode.PREFIX),
                    sequence=True,
                )
            )
        except KtsError:
            raise
        except Exception as exc:  # kazoo's refusals (NoAuthError...): one domain error
            raise refused_write(exc, Subject(f"Token {token_id}'s notification", "token")) from exc

    def _read_tokens(self, token_ids: list[str]) -> None:
        # A data watch is left only on a znode that exists, so a deleted token leaves no watch behind.
        pending = [
            (token_id, self._zk.client.get_async(TokenZNode.path(token_id), watch=self._on_token))
            for token_id in token_ids
        ]
        for token_id, result in pending:
            try:
                data, stat = self._zk.wait(result)
            except NoNodeError:
                self._tokens.pop(token_id, None)
                continue
            self._tokens[token_id] = _version(data, stat)

    def _read_notifications(self) -> dict[str, int]:
        names = [
            name
            for name in self._list(TokenChangeZNode.ROOT, self._on_notification_list)
            if name.startswith(PREFIX_NAME)
        ]
        listed = set(names)
        for gone in self._notifications.keys() - listed:
            del self._notifications[gone]
        fresh = [name for name in names if name not in self._notifications]
        answers = self._zk.read_many([f"{TokenChangeZNode.ROOT}/{name}" for name in fresh]) if fresh else []
        for name, answer in zip(fresh, answers, strict=True):
            if isinstance(answer, NoNodeError):
                continue  # purged meanwhile
            if isinstance(answer, Exception):
                raise refused_read(answer, "a token notification")
            data, stat = answer
            self._notifications[name] = (TokenChangeZNode.decode(data), stat.czxid)
        notified: dict[str, int] = {}
        for token_id, czxid in self._notifications.values():
            notified[token_id] = max(czxid, notified.get(token_id, -1))
        return notified

    def _cutoff(self) -> int:
        for path, created in ((MigrationZNode.PATH, True), (ControllerEpochZNode.PATH, False)):
            try:
                stat = self._zk.wait(self._zk.client.exists_async(path))
            except NoNodeError:
                stat = None
            if stat is not None:
                return int(stat.czxid if created else stat.mzxid)
        return 0

    def _pzxid(self, path: str) -> int:
        try:
            stat = self._zk.wait(self._zk.client.exists_async(path))
        except NoNodeError:
            stat = None
        return 0 if stat is None else int(stat.pzxid)

    def _list(self, path: str, watcher: Any) -> list[str]:
        try:
            return list(self._zk.wait(list_children_async(self._zk.client, path, watcher)))
        except NoNodeError:
            return []

    # Watches (kazoo's event thread): mark and wake, never block.

    def _on_token(self, event: WatchedEvent) -> None:
        with self._lock:
            if event.path:
                self._marks.dirty.add(event.path.rsplit("/", 1)[1])
            else:  # a session event, not a change: read everything again
                self._marks.full = True
        self._wake.set()

    def _on_token_list(self, _event: WatchedEvent) -> None:
        with self._lock:
            self._marks.tokens_listed = True
        self._wake.set()

    def _on_notification_list(self, _event: WatchedEvent) -> None:
        self._wake.set()

    def _on_session(self, state: KazooState) -> None:
        if state != KazooState.CONNECTED:
            with self._lock:
                self._marks.full = True  # watches may be lost with the session
        self._wake.set()


def _version(data: bytes, stat: ZnodeStat) -> TokenVersion:
    try:
        content: TokenInformation | None = TokenZNode.decode(data)
    except MalformedZNode:
        content = None
    return TokenVersion(mzxid=int(stat.mzxid), mtime_ms=int(stat.mtime), content=content)
