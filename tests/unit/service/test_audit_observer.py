"""The auditor tells its observer (the metrics) how every action ended: once per action, whether the
audit database took the event or not, and ``pending`` when the outcome of a change is unknown."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, AuditEvent, EventQuery, Outcome, RequestContext, StoredEvent
from app.domain.errors import StoreUnavailable, TokenNotFound
from app.service.audit import Auditor

CREATE = AuditEvent(Action.TOKEN_CREATE, Outcome.PENDING, principal="User:alice", token_id="t1")


class MemoryAuditLog:
    def __init__(self) -> None:
        self.events: dict[int, AuditEvent] = {}
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable("The audit database is unreachable.")

    def ping(self) -> None:
        self._check()

    def append(self, event: AuditEvent, context: RequestContext) -> int:
        self._check()
        self.events[len(self.events) + 1] = event
        return len(self.events)

    def append_many(self, batch: list[AuditEvent], context: RequestContext) -> list[int]:
        return [self.append(event, context) for event in batch]

    def complete(self, event_id: int, event: AuditEvent) -> bool:
        self._check()
        self.events[event_id] = event
        return True

    def complete_many(self, settled: list[tuple[int, AuditEvent]]) -> int:
        return sum(self.complete(event_id, event) for event_id, event in settled)

    def pending(self, *, older_than_ms: int, service_id: str | None = None) -> list[StoredEvent]:
        return []

    def query(self, query: EventQuery) -> list[StoredEvent]:
        return []

    def is_pending(self, event_id: int) -> bool | None:
        return None


class MemoryIntents:
    def path(self, event_id: int) -> str:
        return f"/kts/audit-intents/{event_id}"

    def existing(self, event_ids: list[int]) -> set[int]:
        return {event_id for event_id in event_ids if self.exists(event_id)}

    def exists(self, event_id: int) -> bool:
        return False

    def clear(self, event_id: int) -> None:
        pass

    def clear_many(self, event_ids: list[int]) -> None:
        pass

    def list(self) -> list[int]:
        return []


class Observed:
    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def observe(self, event: AuditEvent) -> None:
        self.events.append(event)

    def outcomes(self) -> list[tuple[str, str, int | None]]:
        return [(event.action.value, event.outcome.value, event.error_code) for event in self.events]


@pytest.fixture
def log() -> MemoryAuditLog:
    return MemoryAuditLog()


@pytest.fixture
def observed() -> Observed:
    return Observed()


@pytest.fixture
def auditor(log: MemoryAuditLog, observed: Observed) -> Auditor:
    return Auditor(log, MemoryIntents(), observer=observed)


def test_a_recorded_action_is_observed_even_when_the_audit_database_is_down(
    auditor: Auditor, log: MemoryAuditLog, observed: Observed
) -> None:
    log.down = True
    auditor.record(AuditEvent(Action.AUTHENTICATION, Outcome.DENIED, principal="User:alice"))
    assert observed.outcomes() == [("authentication", "denied", None)]


def test_a_refusal_is_observed_with_its_kafka_error_code(auditor: Auditor, observed: Observed) -> None:
    auditor.refused(CREATE, TokenNotFound("gone"))
    assert observed.outcomes() == [("token.create", "denied", 62)]


def test_a_mutation_is_observed_once_as_it_settles(auditor: Auditor, observed: Observed) -> None:
    auditor.mutation(CREATE, lambda intent: None, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert observed.outcomes() == [("token.create", "succeeded", None)]


def test_a_mutation_refused_by_the_store_is_observed_as_denied(auditor: Auditor, observed: Observed) -> None:
    def perform(intent: str) -> None:
        raise TokenNotFound("gone")

    with pytest.raises(TokenNotFound):
        auditor.mutation(CREATE, perform, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert observed.outcomes() == [("token.create", "denied", 62)]


def test_a_mutation_the_audit_database_cannot_take_is_observed_as_failed(
    auditor: Auditor, log: MemoryAuditLog, observed: Observed
) -> None:
    log.down = True
    performed: list[str] = []
    with pytest.raises(StoreUnavailable):
        auditor.mutation(CREATE, performed.append, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert performed == []
    assert observed.outcomes() == [("token.create", "failed", None)]


def test_a_mutation_with_an_unknown_outcome_is_observed_as_pending(auditor: Auditor, observed: Observed) -> None:
    def perform(intent: str) -> None:
        raise StoreUnavailable("connection lost mid-commit")

    with pytest.raises(StoreUnavailable):
        auditor.mutation(CREATE, perform, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert observed.outcomes() == [("token.create", "pending", None)]


def test_each_change_of_a_batch_is_observed(auditor: Auditor, observed: Observed) -> None:
    batch = [AuditEvent(Action.TOKEN_DELETE_BY_SWEEP, Outcome.PENDING, token_id=f"t{n}") for n in range(3)]
    auditor.mutations(batch, lambda intents: None)
    assert observed.outcomes() == [("token.sweep", "succeeded", None)] * 3


def test_without_an_observer_nothing_changes(log: MemoryAuditLog) -> None:
    Auditor(log, MemoryIntents()).record(CREATE.ended(Outcome.SUCCEEDED))
    assert list(log.events.values()) == [CREATE.ended(Outcome.SUCCEEDED)]
