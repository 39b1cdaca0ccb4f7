"""The live replicas, each registered in ``replicas`` with a heartbeat: how many share the account lockout
(its threshold is divided among them, app/domain/lockout.py), without ZooKeeper's election to count them.

Each replica renews its row every third of ``ttl_ms`` to an expiry on the database's clock; a replica whose
row has expired counts no more, and its row is deleted by whichever replica next beats. A replica stopped
cleanly deletes its own row. When the database cannot be reached the last count is kept.
"""

from __future__ import annotations

import logging
import secrets

from sqlalchemy import Engine, delete, func, insert, select, update

from app.domain.errors import KtsError
from app.service.poller import Poller
from app.storage.audit.database import translated_db_errors
from app.storage.sql.db_time import db_now_ms
from app.storage.sql.tables import SERVICE_ID_LENGTH, replicas

log = logging.getLogger(__name__)

TTL_MS = 10_000
_SUFFIX_LENGTH = 9  # "#" and 8 hex digits


def instance_id(service_id: str) -> str:
    """``service.id`` plus a random suffix: two processes started with the same service id (a restart
    while the old one still runs) are still two replicas."""
    return f"{service_id[: SERVICE_ID_LENGTH - _SUFFIX_LENGTH]}#{secrets.token_hex(4)}"


class ReplicaRegistry:
    def __init__(self, engine: Engine, *, service_id: str, instance: str | None = None, ttl_ms: int = TTL_MS) -> None:
        self._engine = engine
        self._service_id = service_id[:SERVICE_ID_LENGTH]
        self.instance_id = instance or instance_id(service_id)
        self._ttl_ms = ttl_ms
        self._count = 1
        self._poller = Poller(
            "replica-heartbeat", self.beat, interval_s=ttl_ms / 3000, failed=self._beat_failed, join_timeout_s=10
        )

    def start(self) -> None:
        """Register and count once (raises StoreUnavailable when the database cannot be reached), then beat."""
        self.beat()
        self._poller.start()

    def stop(self) -> None:
        self._poller.stop()
        try:
            with translated_db_errors(), self._engine.begin() as connection:
                connection.execute(delete(replicas).where(replicas.c.instance_id == self.instance_id))
        except KtsError as exc:  # the row expires by itself
            log.warning("could not unregister replica %s: %s", self.instance_id, exc.message)

    def replicas(self) -> int:
        """Live replicas, this one included, as of the last heartbeat."""
        return self._count

    def beat(self) -> int:
        """Renew this replica's row (registering it again if it was removed while this one was paused),
        forget replicas that stopped beating, and count the live ones."""
        expiry = db_now_ms() + self._ttl_ms
        with translated_db_errors(), self._engine.begin() as connection:
            renewed = connection.execute(
                update(replicas).where(replicas.c.instance_id == self.instance_id).values(expires_at_ms=expiry)
            ).rowcount
            if not renewed:
                connection.execute(
                    insert(replicas).values(
                        instance_id=self.instance_id,
                        service_id=self._service_id,
                        started_at_ms=db_now_ms(),
                        expires_at_ms=expiry,
                    )
                )
            connection.execute(delete(replicas).where(replicas.c.expires_at_ms <= db_now_ms()))
            live = connection.execute(select(func.count()).select_from(replicas)).scalar_one()
        self._count = max(1, int(live))
        return self._count

    def _beat_failed(self, exc: KtsError) -> None:
        log.warning("replica heartbeat failed (the lockout keeps counting %d replicas): %s", self._count, exc.message)
