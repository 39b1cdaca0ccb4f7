"""One ZooKeeper multi-op transaction carrying a change as brokers must see it: the znode writes (each guarded
by the version read, so concurrent writers cannot lose an update), the change notification that tells brokers
and replicas to re-read, and the audit intent marker (app/service/audit.py). All happen or none does.
Every znode created gets the ACL the session's policy chooses for its path.

When the session has a write fence (``ZkConnection.write_fence``: app/storage/zk/cluster_watch.py), the
transaction first asks it whether Kafka's metadata may still be written here, and carries its check as its
first operation: a KRaft controller that claims the cluster between the fence's last reading and the commit
makes the whole transaction fail, so nothing kts writes can land after the claim and be deleted by the
controller. A check lost to an ordinary ZooKeeper controller election is read again and the transaction retried.

Creates and deletes go into kazoo's transaction as its own request records, built here: kazoo's builder methods
check their arguments' types and normalize each path component by component, which for a sweep's batches (a
delete and a notification per token) was about a second of the sweeping replica's CPU per 100k tokens. The
paths kts builds are already normal (checked here, else kazoo normalizes them); the ACL is the policy's list.
Relied on (and checked by tests/unit/storage/zk/test_kazoo_private_api.py): ``TransactionRequest.operations``,
the list of request records ``commit_async`` sends, and the ``Create`` and ``Delete`` records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import Create, Delete

from app.domain.errors import ConcurrentModification
from app.storage.zk.connection import ZkConnection, first_failure
from app.storage.zk.errors import Subject, refused_write
from app.storage.zk.znodes import KtsZNodes

_SEQUENTIAL = 2  # kazoo's create flag for ``sequence=True``
ABSENT = -1  # the version a store reads for a znode that does not exist
FENCE_ATTEMPTS = 4  # controller elections in a row before the caller is told to retry


class ChangeTransaction:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk
        self._operations: list[Callable[[Any], None]] = []  # replayed on a fresh kazoo transaction per attempt
        # Each notification's operation, prefix and data (None: installed by its writer, written_notifications.py).
        self._notifications: list[tuple[int, str, bytes | None]] = []

    def create(self, path: str, data: bytes) -> None:
        request = Create(self._full(path), data, self._zk.acl_for(path), 0)
        self._operations.append(lambda transaction: transaction.operations.append(request))

    def delete(self, path: str, version: int) -> None:
        request = Delete(self._full(path), version)
        self._operations.append(lambda transaction: transaction.operations.append(request))

    def _full(self, path: str) -> str:
        """``path`` under the client's chroot, as kazoo's builder methods send it."""
        return request_path(self._zk.client.chroot, path)

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
            self._operations.append(lambda transaction: transaction.set_data(path, data, version=version))

    def notify(self, prefix: str, data: bytes, *, installed: bool = False) -> None:
        """A persistent sequential change notification (ZooKeeper appends the sequence number to ``prefix``).
        ``installed``: the writer installs the change in this replica's caches itself, so this session's own
        follower skips the notification rather than hand it to its cache (written_notifications.py)."""
        request = Create(self._full(prefix), data, self._zk.acl_for(prefix), _SEQUENTIAL)
        self._notifications.append((len(self._operations), prefix, None if installed else data))
        self._operations.append(lambda transaction: transaction.operations.append(request))

    def mark_intent(self, intent: int | None) -> None:
        """The audit intent marker of the pending event ``intent`` (app/service/audit.py), created with the change."""
        if intent is not None:
            self.create(KtsZNodes.audit_intent(intent), b"")

    def mark_intents(self, intents: Sequence[int]) -> None:
        """The audit intent marker of a batch of pending events changed together: one marker for them all (two or
        more; one event gets its own), so a batch of 500 deletions writes one znode more, not 500."""
        if len(intents) == 1:
            self.mark_intent(intents[0])
        elif intents:
            self.create(KtsZNodes.audit_intent_batch(intents), KtsZNodes.encode_intent_batch(intents))

    def commit(self, subject: Subject) -> None:
        """Apply every operation or none; a refusal raises the domain error for ``subject`` (ClusterMigrating
        when the fence refuses)."""
        if not self._notifications:
            self._commit(subject)
            return
        written = self._zk.written_notifications
        ticket = written.sending()  # its notifications are announced to this session's followers before the answer
        try:
            self._commit(subject)
        finally:
            written.sent(ticket)

    def _commit(self, subject: Subject) -> None:
        fence = self._zk.write_fence
        deferred = self._zk.deferred_deletes
        carried = deferred.take()  # deletions waiting for a transaction (deferred_deletes.py), after ours
        deferred.committing()
        try:
            for _ in range(FENCE_ATTEMPTS):
                check = None if fence is None else fence.admit()
                transaction = self._zk.client.transaction()
                if check is not None:
                    transaction.check(*check)
                for operation in self._operations:
                    operation(transaction)
                own = len(transaction.operations)
                transaction.operations.extend(Delete(self._full(path), -1) for path in carried)
                results = self._zk.commit_results(transaction)
                failure = first_failure(results)
                if failure is None:
                    carried = []
                    self._written(results[0 if check is None else 1 :])
                    return
                index, error = failure
                if index >= own:  # a carried deletion found nothing: go again without them
                    flush, carried = carried, []
                    if deferred.flush is not None:
                        deferred.flush(flush)
                    continue
                if fence is None or check is None or index != 0:
                    raise refused_write(error, subject)
                fence.breached()  # raises if a KRaft controller took over; else a new election: try again
            raise ConcurrentModification(f"{subject.name}: the cluster's controller kept changing; retry.")
        finally:
            deferred.committed()
            deferred.give_back(carried)  # not deleted: they wait for the next transaction

    def _written(self, results: list[Any]) -> None:
        """Tell the session's followers the names the notifications got (written_notifications.py)."""
        by_prefix: dict[str, list[tuple[str, bytes | None]]] = {}
        for index, prefix, data in self._notifications:
            path = results[index]
            if isinstance(path, str):
                by_prefix.setdefault(prefix, []).append((path, data))
        for prefix, written in by_prefix.items():
            self._zk.written_notifications.record(prefix, written)


def request_path(chroot: str, path: str) -> str:
    """kazoo's ``_prefix_root(chroot, path)``, without its component by component normalization when ``path`` and
    the chroot (if any) are already normal."""
    if _normal(path) and (not chroot or _normal(chroot)):
        return chroot + path
    return str(_prefix_root(chroot, path))


def _normal(path: str) -> bool:
    """Absolute, with no empty, ``.`` or ``..`` component and no trailing slash (a name starting with a dot is
    left to kazoo)."""
    return path.startswith("/") and len(path) > 1 and "//" not in path and "/." not in path and path[-1] != "/"
