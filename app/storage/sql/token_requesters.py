"""Which HTTP caller asked for each token kts created on a cluster that records kts itself as the requester:
``token_requesters``, keyed by the cluster's token id, with the ``token.create`` event that names the token.

Through the Kafka protocol kts creates every token as its own principal, so the cluster's ``tokenRequester``
is kts; the caller who asked (what describe shows, and what the requester quota counts) lives here. A row is
written once the create RPC has answered (``record``), or by the audit reconciler when it settles a pending
create by the token the cluster shows (``claim``: the row and the event's completion in one transaction, so
one token is claimed by one event), or when it finds a token kts's principal made that no event names
(``reconstruct``: the row and a reconstructed event in one transaction). The row is also the reconciler's
memory of which of kts's tokens the trail already shows (app/storage/kafka/cluster_audit.py).

Principals are stored as JSON strings, so any principal text comes back exactly as it went in. ``requesters``
is the ``TokenRequesters`` port of app/service/ports.py that the Kafka-protocol token cache reads; ``recent``
tells that cache which tokens any replica made a moment ago, which a broker lagging its controller may not
describe yet, so that a quota counts them (app/storage/sql/quota_guard.py).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import Connection, Engine, delete, insert, select, update

from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind
from app.storage.audit.database import translated_db_errors
from app.storage.audit.sink import SqlAuditLog, completion_parameters, completion_statement
from app.storage.audit.tables import audit_events as events
from app.storage.sql.db_time import db_now_ms
from app.storage.sql.statements import insert_if_absent
from app.storage.sql.tables import SERVICE_ID_LENGTH, token_requesters

T = TypeVar("T")
CHUNK = 500  # values per IN list


@dataclass(frozen=True, slots=True)
class NamedCreate:
    """A succeeded ``token.create`` event naming a token, and the requester it records."""

    event_id: int
    requester: str | None


@dataclass(frozen=True, slots=True)
class RecordedCreate:
    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    counts_until_ms: int | None  # None: not known (count it)

    def counts_against(self, key: QuotaKey, now_ms: int) -> bool:
        """As ``token_quota.counts_against`` for the token this row records."""
        if self.counts_until_ms is not None and self.counts_until_ms <= now_ms:
            return False
        if key.kind is QuotaKind.OWNER:
            return self.owner == key.principal
        return self.requester == key.principal and self.owner != key.principal


class _Abandoned(Exception):
    """Rolls a claim back when the event was settled meanwhile."""


class SqlTokenRequesters:
    def __init__(self, engine: Engine, audit_log: SqlAuditLog, *, service_id: str) -> None:
        self._engine = engine
        self._audit_log = audit_log
        self._service_id = service_id[:SERVICE_ID_LENGTH]

    # -------------------- what the Kafka-protocol token store writes and its cache reads

    def record(
        self, token_id: str, *, requester: str, owner: str, event_id: int | None, counts_until_ms: int | None = None
    ) -> bool:
        """Remember who asked for ``token_id``; False when the token already has a row (kept as it is).
        ``counts_until_ms``: when the token stops counting against quotas (``recent`` answers it)."""
        with translated_db_errors(), self._engine.begin() as connection:
            return self._insert(
                connection, token_id, requester, owner, event_id, reconstructed=False, counts_until_ms=counts_until_ms
            )

    def recent(self, window_ms: int) -> list[RecordedCreate]:
        """Tokens recorded within the last ``window_ms`` by the database's clock, on any replica: what a cache
        fed by a broker that lags its controller may not show yet, and a quota must count all the same."""
        with translated_db_errors(), self._engine.connect() as connection:
            rows = connection.execute(
                select(
                    token_requesters.c.token_id,
                    token_requesters.c.owner,
                    token_requesters.c.requester,
                    token_requesters.c.counts_until_ms,
                ).where(token_requesters.c.recorded_at_ms >= db_now_ms() - window_ms)
            ).all()
        return [
            RecordedCreate(str(token_id), _principal(json.loads(owner)), _principal(json.loads(requester)), until)
            for token_id, owner, requester, until in rows
        ]

    def requesters(self, token_ids: Collection[str]) -> dict[str, KafkaPrincipal]:
        """Who asked for each of ``token_ids`` that kts created (``TokenRequesters``): the recorded row, else
        the succeeded create event naming the token (a row not written yet, or lost with its replica)."""
        wanted = sorted(set(token_ids))
        found: dict[str, KafkaPrincipal] = {}
        with translated_db_errors(), self._engine.connect() as connection:
            for chunk in _chunks(wanted):
                rows = connection.execute(
                    select(token_requesters.c.token_id, token_requesters.c.requester).where(
                        token_requesters.c.token_id.in_(chunk)
                    )
                )
                for token_id, requester in rows:
                    _put(found, str(token_id), json.loads(requester))
        missing = [token_id for token_id in wanted if token_id not in found]
        for token_id, named in self.created_events(missing).items():
            if named.requester is not None:
                _put(found, token_id, named.requester)
        return found

    # -------------------- the reconciler's ledger (app/storage/kafka/cluster_audit.py, TokenLedger)

    def tokens_of_events(self, event_ids: Sequence[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        with translated_db_errors(), self._engine.connect() as connection:
            for chunk in _chunks(event_ids):
                rows = connection.execute(
                    select(token_requesters.c.event_id, token_requesters.c.token_id).where(
                        token_requesters.c.event_id.in_(chunk)
                    )
                )
                found.update({int(event_id): str(token_id) for event_id, token_id in rows})
        return found

    def recorded(self, token_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        with translated_db_errors(), self._engine.connect() as connection:
            for chunk in _chunks(token_ids):
                rows = connection.execute(
                    select(token_requesters.c.token_id).where(token_requesters.c.token_id.in_(chunk))
                )
                found.update(str(token_id) for (token_id,) in rows)
        return found

    def created_events(self, token_ids: Sequence[str]) -> dict[str, NamedCreate]:
        """The earliest succeeded ``token.create`` event naming each of ``token_ids``, where one does."""
        found: dict[str, NamedCreate] = {}
        with translated_db_errors(), self._engine.connect() as connection:
            for chunk in _chunks(token_ids):
                rows = connection.execute(
                    select(events.c.token_id, events.c.id, events.c.token_requester)
                    .where(
                        events.c.token_id.in_(chunk),
                        events.c.action == Action.TOKEN_CREATE.value,
                        events.c.outcome == Outcome.SUCCEEDED.value,
                    )
                    .order_by(events.c.id.desc())
                )
                found.update(
                    {str(token_id): NamedCreate(int(event_id), requester) for token_id, event_id, requester in rows}
                )
        return found

    def adopt(self, token: TokenInformation, named: NamedCreate) -> bool:
        """Record a token whose create event exists (its row was lost with its replica)."""
        with translated_db_errors(), self._engine.begin() as connection:
            return self._insert(
                connection,
                token.token_id,
                named.requester or str(token.token_requester),
                str(token.owner),
                named.event_id,
                reconstructed=False,
                counts_until_ms=_counts_until(token),
            )

    def claim(self, event_id: int, token: TokenInformation, requester: str, settled: AuditEvent) -> bool:
        """In one transaction: record ``token`` as made for the pending event ``event_id`` and settle the event
        as ``settled``. False (nothing written) when the token is claimed already or the event is settled."""
        try:
            with translated_db_errors(), self._engine.begin() as connection:
                if not self._insert(
                    connection,
                    token.token_id,
                    requester,
                    str(token.owner),
                    event_id,
                    reconstructed=False,
                    counts_until_ms=_counts_until(token),
                ):
                    return False
                parameters = {"event_id": event_id, **completion_parameters(settled)}
                if connection.execute(completion_statement(), parameters).rowcount != 1:
                    raise _Abandoned
        except _Abandoned:
            return False
        return True

    def reconstruct(self, token: TokenInformation, event: AuditEvent) -> int | None:
        """In one transaction: write ``event`` (a reconstructed create) and record ``token`` under it; the
        event's id, or None (nothing written) when the token has a row already."""
        with translated_db_errors(), self._engine.begin() as connection:
            if not self._insert(
                connection,
                token.token_id,
                str(token.token_requester),
                str(token.owner),
                None,
                reconstructed=True,
                counts_until_ms=_counts_until(token),
            ):
                return None
            row = self._audit_log.event_row(event, RequestContext())
            event_id = int(connection.execute(insert(events).values(**row)).inserted_primary_key[0])  # type: ignore[index]
            connection.execute(
                update(token_requesters).where(token_requesters.c.token_id == token.token_id).values(event_id=event_id)
            )
        return event_id

    def forget_older_than(self, age_ms: int) -> int:
        """Delete the rows recorded more than ``age_ms`` ago by the database's clock; how many."""
        with translated_db_errors(), self._engine.begin() as connection:
            return int(
                connection.execute(
                    delete(token_requesters).where(token_requesters.c.recorded_at_ms < db_now_ms() - age_ms)
                ).rowcount
            )

    def _insert(
        self,
        connection: Connection,
        token_id: str,
        requester: str,
        owner: str,
        event_id: int | None,
        *,
        reconstructed: bool,
        counts_until_ms: int | None = None,
    ) -> bool:
        return insert_if_absent(
            connection,
            token_requesters,
            {
                "token_id": token_id,
                "requester": json.dumps(requester),
                "owner": json.dumps(owner),
                "event_id": event_id,
                "reconstructed": reconstructed,
                "service_id": self._service_id,
                "recorded_at_ms": db_now_ms(),
                "counts_until_ms": counts_until_ms,
            },
        )


def _counts_until(token: TokenInformation) -> int:
    return min(token.expiry_timestamp, token.max_timestamp)


def _put(found: dict[str, KafkaPrincipal], token_id: str, text: str) -> None:
    if ":" in text:
        found[token_id] = _principal(text)


def _principal(text: str) -> KafkaPrincipal:
    """As stored: no validation can turn a recorded principal away."""
    principal_type, _, name = text.partition(":")
    return KafkaPrincipal(principal_type, name)


def _chunks(values: Iterable[T]) -> Iterator[list[T]]:
    chunk: list[T] = []
    for value in values:
        chunk.append(value)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
