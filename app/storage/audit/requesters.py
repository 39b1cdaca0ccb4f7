"""Who asked for each token kts created through the Kafka protocol, read from the audit trail: the cluster
records kts's own principal as every such token's requester, while the settled ``token.create`` event holds
the caller kts acted for. The audit database is already shared by every replica and kept at least as long as
tokens live, so the mapping needs no table of its own and cannot disagree with the trail.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import and_, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.domain.audit import Action, Outcome
from app.domain.errors import InvalidPrincipal, StoreUnavailable
from app.domain.principal import KafkaPrincipal
from app.storage.audit.tables import audit_events as events

CHUNK = 500


class AuditTokenRequesters:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def requesters(self, token_ids: Collection[str]) -> dict[str, KafkaPrincipal]:
        ids = sorted(set(token_ids))
        found: dict[str, KafkaPrincipal] = {}
        try:
            with self._engine.connect() as connection:
                for start in range(0, len(ids), CHUNK):
                    rows = connection.execute(
                        select(events.c.token_id, events.c.token_requester).where(
                            and_(
                                events.c.action == Action.TOKEN_CREATE.value,
                                events.c.outcome == Outcome.SUCCEEDED.value,
                                events.c.token_id.in_(ids[start : start + CHUNK]),
                            )
                        )
                    )
                    for token_id, requester in rows:
                        try:
                            found[token_id] = KafkaPrincipal.parse(requester)
                        except InvalidPrincipal:
                            continue
        except SQLAlchemyError as exc:
            raise StoreUnavailable(f"The audit database cannot be read ({type(exc).__name__}).") from None
        return found


class NoTokenRequesters:
    """For an audit log that is not a database (benchmarks): only this replica's own creates are known."""

    def requesters(self, token_ids: Collection[str]) -> dict[str, KafkaPrincipal]:
        return {}
