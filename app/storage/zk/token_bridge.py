"""The dual-write bridge: while a ZooKeeper cluster migrates to KRaft, the elected leader of kts's ZooKeeper-mode
replicas writes the change notification the KRaft controller leaves out for each token it creates, changes or
deletes, so that the brokers still in ZooKeeper mode see every token as soon as the controller writes it
(app/domain/token_bridge.py says which changes; docs/operations.md#the-dual-write-bridge).

Each notification is audited as ``token.bridge`` (the token id and the kind of change, never an HMAC: ZooKeeper
holds none) and counted (``kts_token_bridge_notifications``). The bridge writes nothing else, and nothing at all
before the claim or once no broker is left in ZooKeeper mode.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final, Protocol

from app.domain import token_bridge
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.clock import Clock
from app.domain.cluster_migration import ClusterState
from app.domain.errors import KtsError
from app.domain.token_bridge import TokenVersion
from app.service.audit import Auditor

log = logging.getLogger(__name__)
IDLE_CHECK_S: Final = 1.0  # how often an idle bridge looks at the cluster's phase (read from memory)
RETRY_S: Final = 1.0


class TokenLookResult(Protocol):
    @property
    def tokens(self) -> dict[str, TokenVersion]: ...

    @property
    def notified(self) -> dict[str, int]: ...

    @property
    def cutoff_zxid(self) -> int: ...

    @property
    def listed_zxid(self) -> int: ...


class TokenChanges(Protocol):
    """The token znodes and their notifications (app/storage/zk/token_changes.py)."""

    def look(self) -> TokenLookResult: ...

    def wait(self, timeout_s: float) -> bool: ...

    def reset(self) -> None: ...

    def notify(self, token_id: str) -> None: ...


class TokenBridge:
    def __init__(
        self,
        changes: TokenChanges,
        cluster: Callable[[], ClusterState],
        *,
        auditor: Auditor,
        clock: Clock,
        idle_check_s: float = IDLE_CHECK_S,
    ) -> None:
        self._changes = changes
        self._cluster = cluster
        self._auditor = auditor
        self._clock = clock
        self._idle_check_s = idle_check_s
        self._previous: dict[str, TokenVersion] = {}
        # Changes this leadership bridged, until their notification is listed: token id -> zxid covered.
        self._bridged: dict[str, int] = {}
        self._active = False
        # Read by the metrics at each scrape.
        self.notifications_total = 0

    @property
    def active(self) -> bool:
        """Whether it bridges now (dual-write, and this replica leads)."""
        return self._active

    def run(self, lost: threading.Event) -> None:
        """The leader's loop until leadership is lost: idle outside dual-write, else bridge at every change."""
        try:
            while not lost.is_set():
                try:
                    state = self._cluster()
                    if not token_bridge.watching(state):
                        self._stop_bridging()
                        lost.wait(self._idle_check_s)
                        continue
                    if token_bridge.bridging(state):
                        self.bridge()
                    else:
                        self.observe()
                    self._changes.wait(self._idle_check_s)  # lost is checked at least this often
                except KtsError as exc:
                    log.warning("token bridge interrupted: %s", exc.message)
                    lost.wait(RETRY_S)
        finally:
            self._stop_bridging()

    def observe(self) -> None:
        """One look without writing (pre-migration): what the brokers have when the controller claims the cluster,
        so that its rewriting every token znode then, unchanged, costs no notification."""
        self._previous = self._changes.look().tokens

    def bridge(self) -> int:
        """One look: write a notification for every change not covered yet; returns how many were written."""
        if not self._active:
            self._active = True
            log.warning(
                "dual-write: kts writes the token change notifications the KRaft controller leaves out, for the "
                "brokers still in ZooKeeper mode"
            )
        look = self._changes.look()
        notified = dict(look.notified)
        for token_id, zxid in list(self._bridged.items()):
            if notified.get(token_id, -1) >= zxid:
                del self._bridged[token_id]  # listed now: its own notification covers it
            else:
                notified[token_id] = zxid
        changes = token_bridge.uncovered_changes(
            previous=self._previous,
            current=look.tokens,
            notified=notified,
            cutoff_zxid=look.cutoff_zxid,
            listed_zxid=look.listed_zxid,
            now_ms=self._clock.now_ms(),
        )
        written = 0
        try:
            for change in changes:
                self._changes.notify(change.token_id)
                # Covered by its own notification once listed (created after the change's zxid).
                self._bridged[change.token_id] = change.zxid + 1
                written += 1
                self.notifications_total += 1
                self._auditor.record(
                    AuditEvent(
                        Action.TOKEN_BRIDGE,
                        Outcome.SUCCEEDED,
                        token_id=change.token_id,
                        details={"change": change.kind.value},
                    )
                )
        finally:
            if written < len(changes):  # a write failed: look at the same changes again, deletions included
                self._previous = {**self._previous, **look.tokens}
            else:
                self._previous = look.tokens
        if written:
            log.info("bridged %d token changes to the brokers still in ZooKeeper mode", written)
        return written

    def _stop_bridging(self) -> None:
        if self._active:
            log.warning("dual-write over or leadership lost: kts no longer writes token change notifications")
        self._active = False
        self._previous = {}
        self._bridged = {}
        self._changes.reset()
