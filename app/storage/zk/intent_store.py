"""Audit intent markers: ``/kts/audit-intents/<event id>``, created atomically with an audited change."""

from __future__ import annotations

from kazoo.exceptions import NoNodeError

from app.storage.zk.connection import ZkConnection
from app.storage.zk.znodes import KtsZNodes


class ZkIntentStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def path(self, event_id: int) -> str:
        return KtsZNodes.audit_intent(event_id)

    def existing(self, event_ids: list[int]) -> set[int]:
        answers = self._zk.read_many([KtsZNodes.audit_intent(event_id) for event_id in event_ids])
        return {
            event_id for event_id, answer in zip(event_ids, answers, strict=True) if not isinstance(answer, Exception)
        }

    def clear(self, event_id: int) -> None:
        """Delete a settled event's marker without waiting for the answer: the request has nothing to wait
        for, and a marker the delete misses (the session dropped) is removed by the reconciler."""
        if self._zk.connected:
            self._zk.client.delete_async(KtsZNodes.audit_intent(event_id))

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
