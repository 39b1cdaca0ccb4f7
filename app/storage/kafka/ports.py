"""What the Kafka-protocol backend needs from the database its replicas share (app/storage/sql/), or from memory
for a single replica: the ports only this backend has, since its cluster makes each change itself and keeps no
record of kts's own (who asked for a token, the turns of creates charged to one quota, the audit intent marks).
ZooKeeper writes the same facts in the change's own transaction."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from app.domain.principal import KafkaPrincipal
from app.domain.token_quota import QuotaKey


class RecentCreate(Protocol):
    """A token a replica made a moment ago, as far as quotas count it."""

    @property
    def token_id(self) -> str: ...

    def counts_against(self, key: QuotaKey, now_ms: int) -> bool: ...


class TokenRequesters(Protocol):
    """Who asked for each token, where the cluster records kts's own principal instead (the Kafka protocol:
    kts creates as itself, for its HTTP callers). Shared by every replica, kept as long as the tokens."""

    def requesters(self, token_ids: Collection[str]) -> dict[str, KafkaPrincipal]:
        """The requesters known for those of ``token_ids`` kts created; the others are left out."""
        ...

    def record(
        self, token_id: str, *, requester: str, owner: str, event_id: int | None, counts_until_ms: int | None = None
    ) -> bool:
        """Remember who asked for a token the cluster just made, and the pending event of its create (the audit
        reconciler's record that the event made this token, app/storage/kafka/cluster_audit.py); False when the token
        has a record already. Raises StoreUnavailable when the database cannot take it."""
        ...

    def recent(self, window_ms: int) -> Sequence[RecentCreate]:
        """The tokens any replica recorded in the last ``window_ms``: made on the cluster, perhaps not described
        by a broker yet (a broker takes in the controller's record a moment after the create is answered)."""
        ...


class QuotaGuard(Protocol):
    """Turns between creates charged to the same quota, on every replica, for a store whose cluster cannot
    guard a create itself (the Kafka protocol); ZooKeeper's guards are znodes in the create's transaction."""

    def hold(self, keys: Sequence[QuotaKey]) -> AbstractContextManager[Mapping[QuotaKey, int]]:
        """Hold the guards of ``keys`` (a create charged to one of them elsewhere waits) and answer each one's
        version; leaving the block without an error moves every version on (a create was charged)."""
        ...


class IntentMarks(Protocol):
    """Creates the audit intent marker (app/service/audit.py) of a change a cluster made, for a store that
    cannot create it in the same transaction as the change (the Kafka protocol)."""

    def mark(self, intent: int) -> None: ...
