"""The audit protocol for a run of batches with one commit each (``Auditor.mutation_batches``, the sweep's): every
batch is committed pending before its change and settled only after it applied, a batch's settling shares the
next batch's commit, and whatever interrupts the run leaves only pending events whose markers tell the truth."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.errors import ConcurrentModification, StoreUnavailable
from app.service.audit import Auditor
from tests.unit.fakes import FakeAuditLog, FakeIntentStore, RecordingObserver


def _batch(first: int, count: int) -> list[AuditEvent]:
    return [
        AuditEvent(Action.TOKEN_DELETE_BY_SWEEP, Outcome.PENDING, owner="User:alice", token_id=f"t{n}")
        for n in range(first, first + count)
    ]


class Cluster:
    """Applies a batch by creating its intent markers, as the ZooKeeper transaction does, and records what the
    audit log held at that moment."""

    def __init__(self, log: FakeAuditLog, intents: FakeIntentStore) -> None:
        self.log = log
        self.intents = intents
        self.seen: list[tuple[list[int], set[int]]] = []  # (this batch's ids, the ids settled at the write)

    def apply(self, intents: list[int]) -> None:
        ids = list(intents)
        self.seen.append((ids, set(self.log.completed)))
        self.intents.present.update(ids)


@pytest.fixture
def log() -> FakeAuditLog:
    return FakeAuditLog()


@pytest.fixture
def intents() -> FakeIntentStore:
    return FakeIntentStore()


@pytest.fixture
def observed() -> RecordingObserver:
    return RecordingObserver()


@pytest.fixture
def auditor(log: FakeAuditLog, intents: FakeIntentStore, observed: RecordingObserver) -> Auditor:
    return Auditor(log, intents, observer=observed)


def test_each_batch_is_pending_before_its_change_and_settled_after_it_with_one_commit_per_batch(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore
) -> None:
    cluster = Cluster(log, intents)
    with auditor.mutation_batches() as batches:
        for first in (0, 3, 6):
            batches.run(_batch(first, 3), cluster.apply)

    # At each write, this batch's events were appended (pending) and none of them settled; the batch before it was.
    assert cluster.seen == [([1, 2, 3], set()), ([4, 5, 6], {1, 2, 3}), ([7, 8, 9], {1, 2, 3, 4, 5, 6})]
    assert all(log.appended[event_id].outcome is Outcome.PENDING for event_id in range(1, 10))
    assert {event_id: event.outcome for event_id, event in log.completed.items()} == dict.fromkeys(
        range(1, 10), Outcome.SUCCEEDED
    )
    assert [log.completed[event_id].token_id for event_id in range(1, 10)] == [f"t{n}" for n in range(9)]
    assert log.commits == 4  # one per batch, and the last batch's settling
    assert intents.present == set()  # every marker of a settled event is cleared


def test_markers_are_cleared_only_once_their_events_are_settled(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore
) -> None:
    cluster = Cluster(log, intents)
    batches = auditor.mutation_batches()
    batches.run(_batch(0, 2), cluster.apply)
    batches.run(_batch(2, 2), cluster.apply)

    assert intents.cleared == [1, 2]
    assert intents.present == {3, 4}  # applied, not settled yet: the markers say so
    assert sorted(log.completed) == [1, 2]
    batches.close()
    assert intents.cleared == [1, 2, 3, 4]


def test_a_crash_between_batches_leaves_the_last_batch_pending_with_its_markers(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore
) -> None:
    """No ``close``: the process died after the second batch applied. The reconciler settles events by markers."""
    cluster = Cluster(log, intents)
    batches = auditor.mutation_batches()
    batches.run(_batch(0, 2), cluster.apply)
    batches.run(_batch(2, 2), cluster.apply)

    pending = set(log.appended) - set(log.completed)
    assert pending == {3, 4}
    assert intents.existing(sorted(pending)) == pending  # applied: reconciled as succeeded


def test_an_audit_outage_refuses_the_next_batch_and_leaves_the_batch_before_pending_with_its_markers(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore, observed: RecordingObserver
) -> None:
    cluster = Cluster(log, intents)
    batches = auditor.mutation_batches()
    batches.run(_batch(0, 2), cluster.apply)
    log.append_failures = 1

    with pytest.raises(StoreUnavailable):
        batches.run(_batch(2, 2), cluster.apply)

    assert len(cluster.seen) == 1  # the refused batch changed nothing
    assert log.completed == {}
    assert intents.present == {1, 2}  # the first batch applied: the reconciler settles it as succeeded
    batches.close()
    assert log.completed == {}  # nothing left to settle here: it was handed to the reconciler
    assert [outcome for _, outcome, _ in observed.outcomes()] == ["succeeded"] * 2 + ["failed"] * 2


def test_a_refused_change_is_settled_at_once_and_the_batch_before_still_succeeds(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore
) -> None:
    cluster = Cluster(log, intents)

    def refused(_intents: list[int]) -> None:
        raise ConcurrentModification("a token changed")

    with auditor.mutation_batches() as batches:
        batches.run(_batch(0, 2), cluster.apply)
        with pytest.raises(ConcurrentModification):
            batches.run(_batch(2, 2), refused)
        batches.run(_batch(4, 1), cluster.apply)

    outcomes = {event_id: event.outcome for event_id, event in log.completed.items()}
    assert outcomes == {
        1: Outcome.SUCCEEDED,
        2: Outcome.SUCCEEDED,
        3: Outcome.FAILED,
        4: Outcome.FAILED,
        5: Outcome.SUCCEEDED,
    }
    assert intents.present == set()


def test_an_unknown_outcome_leaves_the_batch_pending_and_is_not_settled_later(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore, observed: RecordingObserver
) -> None:
    def lost(_intents: list[int]) -> None:
        raise StoreUnavailable("connection lost mid-commit")

    with auditor.mutation_batches() as batches, pytest.raises(StoreUnavailable):
        batches.run(_batch(0, 2), lost)

    assert sorted(log.appended) == [1, 2] and log.completed == {}  # the reconciler decides by the markers
    assert [outcome for _, outcome, _ in observed.outcomes()] == ["pending", "pending"]


def test_a_settling_the_database_refuses_at_close_is_left_to_the_reconciler(
    auditor: Auditor, log: FakeAuditLog, intents: FakeIntentStore
) -> None:
    cluster = Cluster(log, intents)
    batches = auditor.mutation_batches()
    batches.run(_batch(0, 2), cluster.apply)
    log.complete_fails = True

    batches.close()  # does not raise: the changes are done, and the markers prove it

    assert log.completed == {}
    assert intents.present == {1, 2}
