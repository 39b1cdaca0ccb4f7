"""Who asked for each token (SqlTokenRequesters) on a real PostgreSQL and SQLite: requesters come back exactly,
a row is written once, and the reconciler's writes are atomic: a claim writes the row and settles the event
or does neither, a token is claimed by one event even when two replicas claim it at once, and a reconstructed
event is written once."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from sqlalchemy import Engine

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext
from app.domain.clock import SystemClock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.storage.audit.sink import SqlAuditLog
from app.storage.sql.token_requesters import NamedCreate, SqlTokenRequesters

KTS = KafkaPrincipal.user("kts")
ALICE = KafkaPrincipal.user("alice")
TOKEN = TokenInformation("RealId", ALICE, KTS, (KTS,), 1, 2, 3)


def _stores(url: str, engines: Callable[[str], Engine]) -> tuple[SqlAuditLog, SqlTokenRequesters]:
    engine = engines(url)
    audit_log = SqlAuditLog(engine, service_id="kts-0", clock=SystemClock())
    return audit_log, SqlTokenRequesters(engine, audit_log, service_id="kts-0")


def _pending(audit_log: SqlAuditLog) -> int:
    event = AuditEvent(Action.TOKEN_CREATE, Outcome.PENDING, owner="User:alice", token_id="PlannedByKts")
    return audit_log.append(event, RequestContext())


def _settled(token_id: str) -> AuditEvent:
    return AuditEvent(Action.TOKEN_CREATE, Outcome.SUCCEEDED, token_id=token_id, details={"reconciled": True})


@pytest.mark.parametrize("requester", ["User:alice", 'User:"quoted"\\', "User:\udcff", "User:" + "é" * 1020])
def test_a_requester_comes_back_exactly_and_is_recorded_once(
    coordination_db: str, engines: Callable[[str], Engine], requester: str
) -> None:
    _, ledger = _stores(coordination_db, engines)

    assert ledger.record("RealId", requester=requester, owner="User:alice", event_id=7)
    assert not ledger.record("RealId", requester="User:mallory", owner="User:alice", event_id=8)

    assert {token_id: str(found) for token_id, found in ledger.requesters(["RealId", "Unknown"]).items()} == {
        "RealId": requester
    }
    assert ledger.tokens_of_events([7, 8]) == {7: "RealId"}
    assert ledger.recorded(["RealId", "Unknown"]) == {"RealId"}


def test_a_claim_records_the_token_and_settles_the_event_together(
    coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    audit_log, ledger = _stores(coordination_db, engines)
    first, second = _pending(audit_log), _pending(audit_log)

    assert ledger.claim(first, TOKEN, "User:alice", _settled("RealId"))
    assert not ledger.claim(second, TOKEN, "User:bob", _settled("RealId"))  # the token is the first's

    assert audit_log.is_pending(first) is False and audit_log.is_pending(second) is True
    (event,) = [e for e in audit_log.query(EventQuery()) if e.id == first]
    assert (event.outcome, event.token_id) == ("succeeded", "RealId")
    assert ledger.requesters(["RealId"]) == {"RealId": ALICE}


def test_a_claim_on_a_settled_event_writes_nothing(coordination_db: str, engines: Callable[[str], Engine]) -> None:
    audit_log, ledger = _stores(coordination_db, engines)
    event_id = _pending(audit_log)
    audit_log.complete(event_id, AuditEvent(Action.TOKEN_CREATE, Outcome.FAILED))

    assert not ledger.claim(event_id, TOKEN, "User:alice", _settled("RealId"))

    assert ledger.recorded(["RealId"]) == set()  # the row went back with the refused completion


def test_two_replicas_claiming_one_token_at_once_one_wins(
    coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    audit_log, _ = _stores(coordination_db, engines)
    events = [_pending(audit_log) for _ in range(8)]
    ledgers = [_stores(coordination_db, engines)[1] for _ in range(8)]
    start = threading.Barrier(8, timeout=60)
    won: list[bool] = []

    def claim(ledger: SqlTokenRequesters, event_id: int) -> None:
        start.wait()
        won.append(ledger.claim(event_id, TOKEN, "User:alice", _settled("RealId")))

    threads = [threading.Thread(target=claim, args=pair) for pair in zip(ledgers, events, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert sorted(won) == [False] * 7 + [True]
    assert sum(audit_log.is_pending(event_id) is False for event_id in events) == 1


def test_a_reconstructed_event_is_written_once_and_adoption_names_the_existing_event(
    coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    audit_log, ledger = _stores(coordination_db, engines)
    rebuilt = AuditEvent(Action.TOKEN_CREATE, Outcome.SUCCEEDED, owner="User:alice", token_id="RealId")

    event_id = ledger.reconstruct(TOKEN, rebuilt)

    assert event_id is not None and ledger.reconstruct(TOKEN, rebuilt) is None
    assert [e.id for e in audit_log.query(EventQuery()) if e.token_id == "RealId"] == [event_id]
    assert ledger.tokens_of_events([event_id]) == {event_id: "RealId"}
    assert ledger.requesters(["RealId"]) == {"RealId": KTS}  # the cluster's record: nobody else known

    other = TokenInformation("Other", ALICE, KTS, (), 1, 2, 3)
    named = _pending(audit_log)
    audit_log.complete(named, _settled("Other"))
    assert ledger.created_events(["Other", "RealId"]) == {
        "Other": NamedCreate(named, None),
        "RealId": NamedCreate(event_id, None),
    }
    assert ledger.adopt(other, NamedCreate(named, "User:alice"))
    assert ledger.tokens_of_events([named]) == {named: "Other"}


def test_a_token_without_a_row_is_answered_from_its_create_event(
    coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    """The request completed its event but died before (or failed at) writing the row: the event says who."""
    audit_log, ledger = _stores(coordination_db, engines)
    event_id = audit_log.append(
        AuditEvent(Action.TOKEN_CREATE, Outcome.PENDING, owner="User:alice", token_requester="User:bob"),
        RequestContext(),
    )
    audit_log.complete(event_id, _settled("FromEvent"))

    assert ledger.requesters(["FromEvent", "Nothing"]) == {"FromEvent": KafkaPrincipal.user("bob")}


def test_recent_records_are_those_of_the_last_moments_with_what_quotas_count(
    coordination_db: str, engines: Callable[[str], Engine]
) -> None:
    from sqlalchemy import update

    from app.domain.token_quota import QuotaKey, QuotaKind
    from app.storage.sql.tables import token_requesters

    _, ledger = _stores(coordination_db, engines)
    ledger.record("ForAlice", requester="User:bob", owner="User:alice", event_id=1, counts_until_ms=2_000)
    ledger.record("Old", requester="User:bob", owner="User:alice", event_id=2)
    with engines(coordination_db).begin() as connection:  # recorded a minute ago by the database's clock
        connection.execute(
            update(token_requesters)
            .where(token_requesters.c.token_id == "Old")
            .values(recorded_at_ms=token_requesters.c.recorded_at_ms - 60_000)
        )

    (recent,) = ledger.recent(30_000)
    assert ledger.forget_older_than(30_000) == 1 and ledger.recorded(["Old", "ForAlice"]) == {"ForAlice"}

    assert (recent.token_id, recent.owner, recent.requester) == ("ForAlice", ALICE, KafkaPrincipal.user("bob"))
    bob_for_others = QuotaKey(QuotaKind.REQUESTER, KafkaPrincipal.user("bob"))
    assert recent.counts_against(QuotaKey(QuotaKind.OWNER, ALICE), 1_999)
    assert recent.counts_against(bob_for_others, 1_999)
    assert not recent.counts_against(QuotaKey(QuotaKind.OWNER, ALICE), 2_000)  # expired by then
    assert not recent.counts_against(QuotaKey(QuotaKind.OWNER, KafkaPrincipal.user("bob")), 0)
