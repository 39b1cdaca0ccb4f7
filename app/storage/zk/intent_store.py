"""Audit intent markers: ``/kts/audit-intents/<event id>``, created atomically with an audited change."""

from __future__ import annotations

from kazoo.exceptions import NoNodeError

from app.storage.zk.connection import ZkConnection
from app.storage.zk.paths import AUDIT_INTENTS, audit_intent_path


class ZkIntentStore:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def path(self, event_id: int) -> str:
        return audit_intent_path(event_id)

    def exists(self, event_id: int) -> bool:
        self._zk.ensure_connected()
        return self._zk.wait(self._zk.client.exists_async(audit_intent_path(event_id))) is not None

    def clear(self, event_id: int) -> None:
        self._zk.ensure_connected()
        try:
            self._zk.wait(self._zk.client.delete_async(audit_intent_path(event_id)))
        except NoNodeError:
            pass

    def clear_many(self, event_ids: list[int]) -> None:
        """One transaction for the usual case; one by one if some marker is already gone."""
        transaction = self._zk.client.transaction()
        for event_id in event_ids:
            transaction.delete(audit_intent_path(event_id))
        if self._zk.commit(transaction) is not None:
            for event_id in event_ids:
                self.clear(event_id)

    def list(self) -> list[int]:
        self._zk.ensure_connected()
        names = self._zk.wait(self._zk.client.get_children_async(AUDIT_INTENTS))
        return sorted(int(name) for name in names if name.isdigit())
