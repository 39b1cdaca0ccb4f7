"""The auditor tells its observer (the metrics) how every action ended: once per action, whether the
audit database took the event or not, and ``pending`` when the outcome of a change is unknown."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, AuditEvent, Outcome, RequestContext
from app.domain.errors import StoreUnavailable, TokenNotFound
from app.service.audit import Auditor
from tests.unit.fakes import FakeAuditLog, FakeIntentStore, RecordingObserver

CREATE = AuditEvent(Action.TOKEN_CREATE, Outcome.PENDING, principal="User:alice", token_id="t1")


@pytest.fixture
def log() -> FakeAuditLog:
    return FakeAuditLog()


@pytest.fixture
def observed() -> RecordingObserver:
    return RecordingObserver()


@pytest.fixture
def auditor(log: FakeAuditLog, observed: RecordingObserver) -> Auditor:
    return Auditor(log, FakeIntentStore(), observer=observed)


def test_a_recorded_action_is_observed_even_when_the_audit_database_is_down(
    auditor: Auditor, log: FakeAuditLog, observed: RecordingObserver
) -> None:
    log.down = True
    auditor.record(AuditEvent(Action.AUTHENTICATION, Outcome.DENIED, principal="User:alice"))
    assert observed.outcomes() == [("authentication", "denied", None)]


def test_a_refusal_is_observed_with_its_kafka_error_code(auditor: Auditor, observed: RecordingObserver) -> None:
    auditor.refused(CREATE, TokenNotFound("gone"))
    assert observed.outcomes() == [("token.create", "denied", 62)]


def test_a_mutation_is_observed_once_as_it_settles(auditor: Auditor, observed: RecordingObserver) -> None:
    auditor.mutation(CREATE, lambda intent: None, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert observed.outcomes() == [("token.create", "succeeded", None)]


def test_a_mutation_refused_by_the_store_is_observed_as_denied(auditor: Auditor, observed: RecordingObserver) -> None:
    def perform(intent: int) -> None:
        raise TokenNotFound("gone")

    with pytest.raises(TokenNotFound):
        auditor.mutation(CREATE, perform, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert observed.outcomes() == [("token.create", "denied", 62)]


def test_a_mutation_the_audit_database_cannot_take_is_observed_as_failed(
    auditor: Auditor, log: FakeAuditLog, observed: RecordingObserver
) -> None:
    log.down = True
    performed: list[str] = []
    with pytest.raises(StoreUnavailable):
        auditor.mutation(CREATE, performed.append, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert performed == []
    assert observed.outcomes() == [("token.create", "failed", None)]


def test_a_mutation_with_an_unknown_outcome_is_observed_as_pending(
    auditor: Auditor, observed: RecordingObserver
) -> None:
    def perform(intent: int) -> None:
        raise StoreUnavailable("connection lost mid-commit")

    with pytest.raises(StoreUnavailable):
        auditor.mutation(CREATE, perform, succeeded=lambda _: CREATE.ended(Outcome.SUCCEEDED))
    assert observed.outcomes() == [("token.create", "pending", None)]


def test_each_change_of_a_batch_is_observed(auditor: Auditor, observed: RecordingObserver) -> None:
    batch = [AuditEvent(Action.TOKEN_DELETE_BY_SWEEP, Outcome.PENDING, token_id=f"t{n}") for n in range(3)]
    auditor.mutations(batch, lambda intents: None)
    assert observed.outcomes() == [("token.sweep", "succeeded", None)] * 3


def test_without_an_observer_nothing_changes(log: FakeAuditLog) -> None:
    Auditor(log, FakeIntentStore()).record(CREATE.ended(Outcome.SUCCEEDED))
    assert log.events() == [CREATE.ended(Outcome.SUCCEEDED)]


def test_a_best_effort_event_the_database_rejects_never_fails_the_request(observed: RecordingObserver) -> None:
    class RejectingLog(FakeAuditLog):
        def append(self, event: AuditEvent, context: RequestContext) -> int:
            raise ValueError("PostgreSQL text fields cannot contain NUL (0x00) bytes")

    Auditor(RejectingLog(), FakeIntentStore(), observer=observed).record(
        AuditEvent(Action.AUTHENTICATION, Outcome.DENIED, principal="User:a\x00")
    )
    assert observed.outcomes() == [("authentication", "denied", None)]
