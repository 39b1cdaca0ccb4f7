"""One ZooKeeper multi-op transaction carrying a change as brokers must see it: the znode writes (each guarded
by the version read, so concurrent writers cannot lose an update), the change notification that tells brokers
and replicas to re-read, and the audit intent marker (app/service/audit.py). All happen or none does.
Every znode created gets the ACL the session's policy chooses for its path."""

from __future__ import annotations

from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject, refused_write

ABSENT = -1  # the version a store reads for a znode that does not exist


class ChangeTransaction:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk
        self._transaction = zk.client.transaction()

    def create(self, path: str, data: bytes) -> None:
        self._transaction.create(path, data, acl=self._zk.acl_for(path))

    def delete(self, path: str, version: int) -> None:
        self._transaction.delete(path, version=version)

    def write(self, path: str, data: bytes | None, version: int) -> None:
        """Compare-and-set ``path`` from the state read at ``version`` (``ABSENT``: create it) to ``data``
        (None: delete it)."""
        if version == ABSENT:
            if data is None:
                raise ValueError(f"nothing to delete at {path}")
            self.create(path, data)
        elif data is None:
            self.delete(path, version)
        else:
            self._transaction.set_data(path, data, version=version)

    def notify(self, prefix: str, data: bytes) -> None:
        """A persistent sequential change notification (ZooKeeper appends the sequence number to ``prefix``)."""
        self._transaction.create(prefix, data, acl=self._zk.acl_for(prefix), sequence=True)

    def mark_intent(self, intent: str | None) -> None:
        if intent is not None:
            self.create(intent, b"")

    def commit(self, subject: Subject) -> None:
        """Apply every operation or none; a refusal raises the domain error for ``subject``."""
        failure = self._zk.commit(self._transaction)
        if failure is not None:
            raise refused_write(failure, subject)
