"""``TokenRequesters`` for an audit log that is not a database (benchmarks measure against a no-op sink): only
this replica's own creates are known, which its token cache remembers itself. With the audit database, who
asked for each token is kept in ``token_requesters`` (app/storage/sql/token_requesters.py)."""

from __future__ import annotations

from collections.abc import Collection

from app.domain.principal import KafkaPrincipal
from app.storage.kafka.ports import RecentCreate


class NoTokenRequesters:
    def requesters(self, token_ids: Collection[str]) -> dict[str, KafkaPrincipal]:
        return {}

    def record(
        self, token_id: str, *, requester: str, owner: str, event_id: int | None, counts_until_ms: int | None = None
    ) -> bool:
        return False

    def recent(self, window_ms: int) -> list[RecentCreate]:
        return []
