"""Audit intent markers: ``/kts/audit-intents/<event id>``, created atomically with an audited change."""

from __future__ import annotations

import threading
from typing import Any

from kazoo.exceptions import NoNodeError

from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import KtsZNodes

# Markers deleted per transaction at most, far under ZooKeeper's request limit (a marker path is < 40 bytes).
MAX_CLEAR_BATCH = 1000


class ZkIntentStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk
        # Markers of settled events waiting for the deletion in flight to be answered (``clear``).
        self._lock = threading.Lock()
        self._waiting: list[int] = []
        self._in_flight = False

    def existing(self, event_ids: list[int]) -> set[int]:
        answers = self._zk.read_many([KtsZNodes.audit_intent(event_id) for event_id in event_ids])
        return {
            event_id for event_id, answer in zip(event_ids, answers, strict=True) if not isinstance(answer, Exception)
        }

    def clear(self, event_id: int) -> None:
        """Delete a settled event's marker without waiting for the answer (``clear_soon``): the request has
        nothing to wait for."""
        self.clear_soon([event_id])

    def clear_soon(self, event_ids: list[int]) -> None:
        """Delete settled events' markers without waiting for the answer; a marker the delete misses (the session
        dropped) is removed by the reconciler.

        Deletions are self-clocked: with none in flight, these are sent at once; while one is in flight, markers
        wait and go together in one transaction when it is answered. Under concurrent creates that is one
        ZooKeeper write for many markers rather than one each (a ZooKeeper write costs the server a log append
        and kts a request), and when idle it adds no delay and needs no thread or timer."""
        with self._lock:
            self._waiting.extend(event_ids)
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

    def _delete_async(self, batch: list[int]) -> Any:
        if len(batch) == 1:
            return self._zk.client.delete_async(KtsZNodes.audit_intent(batch[0]))
        transaction = self._zk.client.transaction()
        for event_id in batch:
            transaction.delete(KtsZNodes.audit_intent(event_id))
        return transaction.commit_async()

    def _answered(self, batch: list[int], result: Any) -> None:
        """On kazoo's callback thread: a transaction refused as a whole (a marker the reconciler deleted first)
        is sent again one marker at a time, unanswered; then the markers that waited meanwhile go."""
        if len(batch) > 1 and result.successful() and any(isinstance(one, Exception) for one in result.get()):
            for event_id in batch:
                try:
                    self._zk.client.delete_async(KtsZNodes.audit_intent(event_id))
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
                self._delete(event_id)

    def _delete(self, event_id: int) -> None:
        try:
            self._zk.wait(self._zk.client.delete_async(KtsZNodes.audit_intent(event_id)))
        except NoNodeError:
            pass

    def list(self) -> list[int]:
        self._zk.ensure_connected()
        names = self._zk.wait(self._zk.client.get_children_async(KtsZNodes.AUDIT_INTENTS))
        return sorted(event_id for name in names if (event_id := KtsZNodes.audit_intent_event_id(name)) is not None)
