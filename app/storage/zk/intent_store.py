"""Audit intent markers: ``/kts/audit-intents/<event id>``, created atomically with an audited change, and
``/kts/audit-intents/<first event id>-<last event id>``, one for a batch of changes made in one transaction (the
sweep's deletions), whose data lists the batch's event ids (app/storage/zk/znodes/kts.py)."""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Iterator
from typing import Any

from kazoo.exceptions import NoNodeError

from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import refused_read
from app.storage.zk.znodes import KtsZNodes
from app.storage.zk.znodes.malformed import MalformedZNode

log = logging.getLogger(__name__)

# Markers deleted per transaction at most, far under ZooKeeper's request limit (a marker path is < 40 bytes).
MAX_CLEAR_BATCH = 1000


class ZkIntentStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk
        # Paths of settled events' markers waiting for the deletion in flight to be answered (``clear_soon``).
        self._lock = threading.Lock()
        self._waiting: list[str] = []
        self._in_flight = False
        zk.deferred_deletes.flush = self._delete_now  # what no transaction carried in time

    def existing(self, event_ids: list[int]) -> set[int]:
        """From one listing of the markers, and a read of each batch marker whose range holds an asked id: a
        batch's first event (the one its marker is named after) may have been asked in an earlier round."""
        asked = sorted(set(event_ids))
        if not asked:
            return set()
        wanted = set(asked)
        found: set[int] = set()
        batches = []
        for name in self._names():
            event_id = KtsZNodes.audit_intent_event_id(name)
            if event_id is not None:
                if event_id in wanted:
                    found.add(event_id)
                continue
            span = KtsZNodes.audit_intent_batch_range(name)
            if span is not None and _holds_one(asked, *span):
                batches.append(name)
        for marked in self._batch_ids(batches):
            found.update(wanted.intersection(marked))
        return found

    def marks(self) -> list[list[int]]:
        """Every marker's event ids: one event's, or a batch's (a batch marker whose data is unreadable, which
        kts never writes, is left out and logged)."""
        singles = []
        batches = []
        for name in self._names():
            event_id = KtsZNodes.audit_intent_event_id(name)
            if event_id is not None:
                singles.append([event_id])
            elif KtsZNodes.audit_intent_batch_range(name) is not None:
                batches.append(name)
        return sorted([*singles, *self._batch_ids(batches)])

    def _names(self) -> list[str]:
        self._zk.ensure_connected()
        try:
            return list(self._zk.wait(self._zk.client.get_children_async(KtsZNodes.AUDIT_INTENTS)))
        except NoNodeError:
            return []

    def _batch_ids(self, names: list[str]) -> Iterator[list[int]]:
        """The event ids of each of the batch markers ``names`` (one cleared meanwhile is left out)."""
        if not names:
            return
        paths = [f"{KtsZNodes.AUDIT_INTENTS}/{name}" for name in names]
        for path, answer in zip(paths, self._zk.read_many(paths), strict=True):
            if isinstance(answer, NoNodeError):
                continue  # cleared since the listing: its events were settled
            if isinstance(answer, Exception):
                raise refused_read(answer, f"the audit intent marker {path}")
            try:
                yield KtsZNodes.decode_intent_batch(answer[0])
            except MalformedZNode as exc:
                log.warning("ignoring the audit intent marker %s: %s", path, exc)

    def clear(self, event_id: int) -> None:
        """Delete a settled event's marker now, without waiting for the answer: the request has nothing to wait
        for (requests of this session that follow see it deleted)."""
        self._delete_now([KtsZNodes.audit_intent(event_id)])

    def clear_soon(self, event_ids: list[int]) -> None:
        """Delete settled events' markers without waiting for the answer; a marker the delete misses (the session
        dropped) is removed by the reconciler.

        The deletions ride on this session's next transaction (deferred_deletes.py): under concurrent creates a
        marker costs ZooKeeper no write of its own. Those no transaction takes within a few milliseconds are
        deleted here, self-clocked: with no deletion in flight, at once; while one is in flight, they wait and go
        together in one transaction when it is answered."""
        self._delete_soon([KtsZNodes.audit_intent(event_id) for event_id in event_ids])

    def clear_batch_soon(self, event_ids: list[int]) -> None:
        """``clear_soon`` for the marker of a batch changed in one transaction (``event_ids``: exactly its events)."""
        if event_ids:
            self._delete_soon([_marker(event_ids)])

    def clear_batch(self, event_ids: list[int]) -> None:
        """Delete the marker of a batch changed in one transaction (``event_ids``: exactly its events)."""
        if event_ids:
            self._delete(_marker(event_ids))

    def _delete_soon(self, paths: list[str]) -> None:
        self._zk.deferred_deletes.add(paths)

    def _delete_now(self, paths: list[str]) -> None:
        with self._lock:
            self._waiting.extend(paths)
            if self._in_flight:
                return
            self._in_flight = True
        self._send_waiting()

    def _send_waiting(self) -> None:
        with self._lock:
            batch = self._waiting[:MAX_CLEAR_BATCH]
            del self._waiting[:MAX_CLEAR_BATCH]
            if not batch:
                self._in_flight = False
                return
        try:
            if not self._zk.connected:
                raise ConnectionError("not connected")  # left to the reconciler, as a lost answer would be
            sent = self._delete_async(batch)
        except Exception:  # kazoo refuses requests while closing: the reconciler deletes what is left
            self._send_waiting()
            return
        sent.rawlink(lambda result: self._answered(batch, result))

    def _delete_async(self, paths: list[str]) -> Any:
        if len(paths) == 1:
            return self._zk.client.delete_async(paths[0])
        transaction = self._zk.client.transaction()
        for path in paths:
            transaction.delete(path)
        return transaction.commit_async()

    def _answered(self, paths: list[str], result: Any) -> None:
        """On kazoo's callback thread: a transaction refused as a whole (a marker the reconciler deleted first)
        is sent again one marker at a time, unanswered; then the markers that waited meanwhile go."""
        if len(paths) > 1 and result.successful() and any(isinstance(one, Exception) for one in result.get()):
            for path in paths:
                try:
                    self._zk.client.delete_async(path)
                except Exception:  # closing: left to the reconciler
                    break
        self._send_waiting()

    def clear_many(self, event_ids: list[int]) -> None:
        """One transaction for the usual case; one by one if some marker is already gone."""
        transaction = self._zk.client.transaction()
        for event_id in event_ids:
            transaction.delete(KtsZNodes.audit_intent(event_id))
        if self._zk.commit(transaction) is not None:
            for event_id in event_ids:
                self._delete(KtsZNodes.audit_intent(event_id))

    def _delete(self, path: str) -> None:
        try:
            self._zk.wait(self._zk.client.delete_async(path))
        except NoNodeError:
            pass


def _marker(event_ids: list[int]) -> str:
    """The marker ``ChangeTransaction.mark_intents`` creates for these events."""
    return KtsZNodes.audit_intent(event_ids[0]) if len(event_ids) == 1 else KtsZNodes.audit_intent_batch(event_ids)


def _holds_one(asked: list[int], first: int, last: int) -> bool:
    """Whether the sorted ``asked`` holds an id from ``first`` to ``last``."""
    at = bisect.bisect_left(asked, first)
    return at < len(asked) and asked[at] <= last
