"""The expiry sweep's decisions, with in-memory fakes: which tokens it deletes, when a concurrent renew or
delete wins, when it stops, and the audit protocol around each deletion
(docs/kafka-compatibility.md#semantics-of-the-token-operations)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from app.domain.acl import AclAuthorizer, AclSnapshot
from app.domain.audit import Action, Outcome
from app.domain.errors import StoreUnavailable, TokenNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_share import SharePolicy
from app.service.audit import Auditor
from app.service.ports import StoredToken
from app.storage.zk import admission as admission_module
from app.storage.zk.sweeper import Sweeper
from tests.unit.fakes import NOW, FakeAuditLog, FakeClock, FakeIntentStore, FakeTokenStore, FakeTokenView
from tests.unit.storage.zk.fakes import zk_admission

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
CAROL = KafkaPrincipal.user("carol")


@pytest.fixture
def one_token_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of one, so that "mid-sweep" falls between two deletions."""
    monkeypatch.setattr(admission_module, "BATCH", 1)


def test_a_batch_is_deleted_in_one_transaction_with_one_audit_commit_each_side() -> None:
    harness = Harness([_stored(f"Batch{n}", expiry=NOW - 1) for n in range(5)])
    assert harness.sweeper.sweep() == 5
    assert sorted(harness.deleted_ids) == [f"Batch{n}" for n in range(5)]
    assert len(harness.log.completed) == 5
    assert all(event.outcome is Outcome.SUCCEEDED for event in harness.log.completed.values())
    assert harness.log.commits == 2


@pytest.mark.usefixtures("one_token_batches")
def test_each_batch_settles_the_one_before_in_its_own_audit_commit() -> None:
    """One commit per batch (and one for the last batch's settling), not two: every deletion still settled."""
    harness = Harness([_stored(f"Batch{n}", expiry=NOW - 1) for n in range(4)])

    assert harness.sweeper.sweep() == 4

    assert harness.log.commits == 5
    assert sorted(event.token_id for event in harness.log.completed.values()) == [f"Batch{n}" for n in range(4)]
    assert all(event.outcome is Outcome.SUCCEEDED for event in harness.log.completed.values())
    assert harness.intents.present == set()


class Harness:
    def __init__(
        self,
        tokens: Iterable[StoredToken],
        *,
        now: int = NOW,
        interval_ms: int = 3_600_000,
        room: Callable[[], int] | None = None,
        share_policy: SharePolicy | None = None,
        **options: Any,
    ) -> None:
        tokens = list(tokens)
        self.clock = FakeClock(now)
        self.store = FakeTokenStore(tokens)
        self.view = FakeTokenView(tokens)
        self.log = FakeAuditLog()
        self.intents = FakeIntentStore()
        authorizer = AclAuthorizer([], AclSnapshot)
        options["admission"] = zk_admission(
            self.view, clock=self.clock, authorizer=authorizer, shares=share_policy or SharePolicy(0)
        )
        self.sweeper = Sweeper(
            self.store,
            self.view,
            auditor=Auditor(self.log, self.intents),
            clock=self.clock,
            interval_ms=interval_ms,
            room=room,
            **options,
        )

    @property
    def deleted_ids(self) -> list[str]:
        return [token_id for token_id, _, _ in self.store.deleted]


def _stored(
    token_id: str,
    *,
    expiry: int,
    max_ts: int = NOW + 10_000,
    version: int = 0,
    owner: KafkaPrincipal = ALICE,
    requester: KafkaPrincipal | None = None,
) -> StoredToken:
    token = TokenInformation(token_id, owner, requester or owner, (BOB,), NOW - 50_000, expiry, max_ts)
    return StoredToken(token, version)


def test_sweeps_exactly_the_tokens_past_their_expiry_or_their_maximum() -> None:
    harness = Harness(
        [
            _stored("PastExpiry", expiry=NOW - 1),
            _stored("PastMax", expiry=NOW + 5_000, max_ts=NOW - 1),
            _stored("ExpiresNow", expiry=NOW),
            _stored("MaxNow", expiry=NOW + 5_000, max_ts=NOW),
            _stored("Live", expiry=NOW + 1),
        ]
    )

    assert harness.sweeper.sweep() == 2

    assert sorted(harness.deleted_ids) == ["PastExpiry", "PastMax"]
    assert sorted(harness.store.tokens) == ["ExpiresNow", "Live", "MaxNow"]
    assert sorted(harness.view.discarded) == ["PastExpiry", "PastMax"]
    assert harness.sweeper.deleted_total == 2
    # it knows what it deleted: no re-read, nothing installed, nothing created or updated
    assert harness.view.refreshed == [] and harness.view.applied == []
    assert harness.store.created == [] and harness.store.updated == []


def test_a_cluster_that_refuses_writes_is_not_swept_at_all() -> None:
    """Migrating to KRaft: its controller expires tokens now, and kts writes nothing (cluster_watch.py)."""
    allowed = [False]
    harness = Harness([_stored("Migrating", expiry=NOW - 1)], writes_allowed=lambda: allowed[0])
    assert harness.sweeper.sweep() == 0
    assert harness.deleted_ids == []
    assert harness.log.completed == {} and harness.sweeper.runs_total == 0
    allowed[0] = True
    assert harness.sweeper.sweep() == 1


def test_a_sweep_with_nothing_expired_deletes_and_audits_nothing() -> None:
    harness = Harness([_stored("Live", expiry=NOW + 1), _stored("ExpiresNow", expiry=NOW)])

    assert harness.sweeper.sweep() == 0
    assert harness.store.deleted == [] and harness.log.appended == {}


def test_deletes_the_version_it_judged_expired_with_the_audit_intent_in_the_same_write() -> None:
    harness = Harness([_stored("PastExpiry", expiry=NOW - 1, version=7)])

    harness.sweeper.sweep()

    (event_id,) = harness.log.appended
    assert harness.store.deleted == [("PastExpiry", 7, event_id)]


def test_a_token_renewed_since_the_cache_saw_it_is_not_swept() -> None:
    harness = Harness([_stored("Renewed", expiry=NOW - 1), _stored("Stale", expiry=NOW - 1)])
    harness.store.renew("Renewed", NOW + 60_000)  # the cache still shows the expired version

    assert harness.sweeper.sweep() == 1

    assert harness.deleted_ids == ["Stale"]
    assert harness.store.tokens["Renewed"].token.expiry_timestamp == NOW + 60_000
    assert [event.token_id for event in harness.log.appended.values()] == ["Stale"]  # no event for the skip


def test_a_token_renewed_between_its_read_and_its_delete_survives() -> None:
    harness = Harness([_stored("RaceRenewed", expiry=NOW - 1)])

    def renew_right_after_read(token_id: str) -> None:
        harness.store.after_get = None
        harness.store.renew(token_id, NOW + 60_000)

    harness.store.after_get = renew_right_after_read

    assert harness.sweeper.sweep() == 0

    assert harness.store.tokens["RaceRenewed"].version == 1
    assert harness.view.discarded == []
    assert harness.sweeper.deleted_total == 0
    ((event_id, completed),) = harness.log.completed.items()
    assert completed.outcome == Outcome.FAILED  # the attempt is on record, and it did not happen
    assert completed.details["error"] == "CONCURRENT_MODIFICATION"
    assert harness.intents.cleared == [event_id]


@pytest.mark.usefixtures("one_token_batches")
def test_a_token_renewed_while_the_batch_before_it_is_deleted_survives() -> None:
    """The next batch is re-read while the one before it is deleted: a renew landing then still wins, as each
    deletion is guarded by the version its own batch read (whether that read came before the renew or after)."""
    ids = ["AheadFirst", "AheadSecond"]
    harness = Harness([_stored(token_id, expiry=NOW - 1) for token_id in ids])

    def renew_the_other(deleted_id: str) -> None:
        harness.store.after_delete = None
        harness.store.renew(next(token_id for token_id in ids if token_id != deleted_id), NOW + 60_000)

    harness.store.after_delete = renew_the_other

    assert harness.sweeper.sweep() == 1

    (deleted,) = harness.deleted_ids
    (survivor,) = set(ids) - {deleted}
    assert harness.store.tokens[survivor].version == 1
    assert harness.view.discarded == [deleted]


def test_a_token_deleted_before_the_sweep_reads_it_is_skipped() -> None:
    harness = Harness([_stored("GoneAlready", expiry=NOW - 1), _stored("StillThere", expiry=NOW - 1)])
    del harness.store.tokens["GoneAlready"]  # expired by a request; the cache has not caught up

    assert harness.sweeper.sweep() == 1

    assert harness.deleted_ids == ["StillThere"]
    assert [event.token_id for event in harness.log.appended.values()] == ["StillThere"]


def test_a_token_deleted_between_its_read_and_its_delete_is_not_counted() -> None:
    harness = Harness([_stored("RaceDeleted", expiry=NOW - 1)])

    def delete_right_after_read(token_id: str) -> None:
        harness.store.after_get = None
        del harness.store.tokens[token_id]

    harness.store.after_get = delete_right_after_read

    assert harness.sweeper.sweep() == 0

    ((_, completed),) = harness.log.completed.items()
    assert completed.outcome != Outcome.SUCCEEDED
    assert completed.error_code == TokenNotFound.code  # settled as the store answered: 62
    assert harness.sweeper.deleted_total == 0


def test_a_token_renewed_before_the_sweep_starts_but_still_expired_is_deleted_at_its_new_version() -> None:
    harness = Harness([_stored("RenewedButExpired", expiry=NOW - 10, version=0)])
    harness.store.renew("RenewedButExpired", NOW - 5)

    assert harness.sweeper.sweep() == 1

    assert harness.store.deleted[0][:2] == ("RenewedButExpired", 1)
    (event,) = harness.log.appended.values()
    assert event.details["expiryTimestamp"] == NOW - 5  # the authoritative timestamps, not the cache's


@pytest.mark.usefixtures("one_token_batches")
def test_the_sweep_stops_when_leadership_is_lost_mid_sweep() -> None:
    harness = Harness([_stored(f"Expired{n}", expiry=NOW - 1) for n in range(5)])
    lost = threading.Event()
    harness.store.after_delete = lambda _token_id: lost.set()

    assert harness.sweeper.sweep(lost) == 1

    assert harness.deleted_ids == ["Expired0"]  # tokens are swept in token id order
    assert len(harness.store.tokens) == 4
    assert len(harness.log.appended) == 1


def test_a_sweep_started_without_leadership_deletes_nothing() -> None:
    harness = Harness([_stored("Expired", expiry=NOW - 1)])
    lost = threading.Event()
    lost.set()

    assert harness.sweeper.sweep(lost) == 0
    assert harness.store.deleted == [] and harness.log.appended == {}


def test_each_deletion_is_an_audited_mutation_named_token_sweep() -> None:
    harness = Harness(
        [
            _stored("AlicesToken", expiry=NOW - 1, owner=ALICE),
            _stored("CarolsToken", expiry=NOW + 1, max_ts=NOW - 2, owner=CAROL, requester=ALICE),
        ]
    )

    harness.sweeper.sweep()

    pending = list(harness.log.appended.values())
    assert [event.action for event in pending] == [Action.TOKEN_DELETE_BY_SWEEP] * 2
    assert [event.outcome for event in pending] == [Outcome.PENDING] * 2  # recorded before the delete
    assert [(e.token_id, e.owner, e.token_requester) for e in pending] == [
        ("AlicesToken", "User:alice", "User:alice"),
        ("CarolsToken", "User:carol", "User:alice"),
    ]
    assert pending[1].details == {"expiryTimestamp": NOW + 1, "maxTimestamp": NOW - 2}
    completed = harness.log.completed
    assert sorted(completed) == sorted(harness.log.appended)
    assert all(event.outcome == Outcome.SUCCEEDED for event in completed.values())
    assert all(event.action == Action.TOKEN_DELETE_BY_SWEEP for event in completed.values())
    assert sorted(harness.intents.cleared) == sorted(harness.log.appended)
    assert Action.TOKEN_DELETE_BY_SWEEP.value == "token.sweep"


def test_an_audit_outage_stops_the_sweep_before_any_deletion() -> None:
    """Audit fails closed: no event, no deletion. The error reaches the caller (``run`` logs it)."""
    harness = Harness([_stored("Expired1", expiry=NOW - 1), _stored("Expired2", expiry=NOW - 1)])
    harness.log.append_failures = 1

    with pytest.raises(StoreUnavailable):
        harness.sweeper.sweep()

    assert harness.store.deleted == []
    assert sorted(harness.store.tokens) == ["Expired1", "Expired2"]  # the second was not tried either
    assert harness.log.appended == {}


@pytest.mark.usefixtures("one_token_batches")
def test_an_audit_outage_mid_sweep_keeps_the_deletions_already_made_and_stops() -> None:
    harness = Harness([_stored(f"Expired{n}", expiry=NOW - 1) for n in range(3)])

    def audit_goes_down(_token_id: str) -> None:
        harness.log.append_failures = 10

    harness.store.after_delete = audit_goes_down

    with pytest.raises(StoreUnavailable):
        harness.sweeper.sweep()

    assert harness.deleted_ids == ["Expired0"]
    assert sorted(harness.store.tokens) == ["Expired1", "Expired2"]
    assert harness.view.discarded == ["Expired0"]


@pytest.mark.usefixtures("one_token_batches")
def test_deleted_total_counts_deletions_made_before_a_sweep_was_interrupted() -> None:
    harness = Harness([_stored(f"Expired{n}", expiry=NOW - 1) for n in range(3)])

    def audit_goes_down(_token_id: str) -> None:
        harness.log.append_failures = 10

    harness.store.after_delete = audit_goes_down

    with pytest.raises(StoreUnavailable):
        harness.sweeper.sweep()

    assert harness.deleted_ids == ["Expired0"]
    assert harness.sweeper.deleted_total == 1


def test_an_audit_outage_after_the_deletion_still_counts_it_and_leaves_the_marker_for_reconciliation() -> None:
    harness = Harness([_stored("Expired", expiry=NOW - 1)])
    harness.log.complete_fails = True

    assert harness.sweeper.sweep() == 1

    assert harness.deleted_ids == ["Expired"]
    assert harness.log.completed == {}  # left pending
    assert harness.intents.cleared == []  # the marker proves the deletion happened


def test_the_sweep_judges_expiry_by_the_clock_at_sweep_time() -> None:
    harness = Harness([_stored("ExpiresSoon", expiry=NOW + 1_000)])

    assert harness.sweeper.sweep() == 0
    harness.clock.now = NOW + 1_000
    assert harness.sweeper.sweep() == 0  # expiry == now is not yet expired
    harness.clock.now = NOW + 1_001
    assert harness.sweeper.sweep() == 1


def test_run_sweeps_until_leadership_is_lost_and_survives_an_audit_outage() -> None:
    harness = Harness([_stored("Expired", expiry=NOW - 1)], interval_ms=1)
    harness.log.append_failures = 3  # the first three sweeps meet an audit outage
    lost = threading.Event()
    harness.store.after_delete = lambda _token_id: lost.set()

    runner = threading.Thread(target=harness.sweeper.run, args=(lost,), daemon=True)
    runner.start()
    runner.join(timeout=5)

    assert not runner.is_alive()
    assert harness.deleted_ids == ["Expired"]
    assert harness.sweeper.deleted_total == 1


def test_run_returns_at_once_when_leadership_is_already_lost() -> None:
    harness = Harness([_stored("Expired", expiry=NOW - 1)], interval_ms=3_600_000)
    lost = threading.Event()
    lost.set()

    harness.sweeper.run(lost)

    assert harness.store.deleted == []


def test_run_waits_the_interval_between_sweeps_and_returns_when_leadership_is_lost() -> None:
    harness = Harness([], interval_ms=3_600_000)
    lost = threading.Event()
    runner = threading.Thread(target=harness.sweeper.run, args=(lost,), daemon=True)
    runner.start()
    runner.join(timeout=0.1)
    assert runner.is_alive()  # sleeping out the hour

    lost.set()
    runner.join(timeout=2)
    assert not runner.is_alive()


def test_a_sweep_deletes_only_as_many_tokens_as_the_notification_list_has_room_for(
    one_token_batches: None, caplog: pytest.LogCaptureFixture
) -> None:
    room = [3]

    def notifications_left() -> int:
        left = room[0]
        room[0] = max(0, left - 1)  # each deletion writes a notification
        return left

    harness = Harness([_stored(f"Doomed{n}", expiry=NOW - 1) for n in range(5)], room=notifications_left)

    assert harness.sweeper.sweep() == 3
    assert len(harness.store.tokens) == 2  # left for the next sweep
    assert "sweep paused with 2 expired tokens left" in caplog.text
    room[0] = 10  # the leader purged old notifications meanwhile
    assert harness.sweeper.sweep() == 2
    assert harness.store.tokens == {}


class SteppingTimer:
    """A monotonic timer that moves ``step_s`` on each reading: every check of the loop is seconds apart."""

    def __init__(self, step_s: float) -> None:
        self.now_s = 0.0
        self.step_s = step_s

    def __call__(self) -> float:
        self.now_s += self.step_s
        return self.now_s


def _run_until_a_deletion(harness: Harness) -> None:
    lost = threading.Event()
    harness.store.after_delete = lambda _token_id: lost.set()
    runner = threading.Thread(target=harness.sweeper.run, args=(lost,), daemon=True)
    runner.start()
    runner.join(timeout=30)
    lost.set()
    runner.join(timeout=5)
    assert not runner.is_alive()


def test_expired_tokens_piling_up_bring_the_sweep_forward_long_before_the_interval() -> None:
    expired = [_stored(f"Expired{n}", expiry=NOW - 1) for n in range(3)]
    harness = Harness(expired, interval_ms=3_600_000, early_threshold=3, timer=SteppingTimer(10.0))
    _run_until_a_deletion(harness)
    assert harness.sweeper.early_runs_total == 1 and harness.sweeper.runs_total == 1
    assert sorted(harness.deleted_ids) == ["Expired0", "Expired1", "Expired2"]


def test_fewer_expired_tokens_wait_for_the_interval_unless_a_list_is_near_its_limit() -> None:
    near = threading.Event()
    harness = Harness(
        [_stored("Expired", expiry=NOW - 1)],
        interval_ms=3_600_000,
        early_threshold=3,
        near_capacity=lambda: near.is_set(),
        timer=SteppingTimer(10.0),
    )
    lost = threading.Event()
    runner = threading.Thread(target=harness.sweeper.run, args=(lost,), daemon=True)
    runner.start()
    runner.join(timeout=2.5)  # two looks, nothing due
    assert harness.sweeper.runs_total == 0
    near.set()
    harness.store.after_delete = lambda _token_id: lost.set()
    runner.join(timeout=30)
    assert harness.deleted_ids == ["Expired"] and harness.sweeper.early_runs_total == 1


def test_batches_are_grouped_by_requester_and_each_charges_its_requesters_in_its_own_transaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admission_module, "BATCH", 2)
    tokens = [
        _stored("A1", expiry=NOW - 1, requester=CAROL),
        _stored("B1", expiry=NOW - 1),
        _stored("C1", expiry=NOW - 1, requester=CAROL),
        _stored("Live", expiry=NOW + 1),
    ]
    harness = Harness(tokens, share_policy=SharePolicy(1_000))
    assert harness.sweeper.sweep() == 3
    assert harness.deleted_ids == ["B1", "A1", "C1"]  # by requester, User:alice's first, then by token id
    assert harness.store.ledgers.charges == [[ALICE, CAROL], [CAROL]]  # one ledger write per requester a batch
    assert harness.store.ledgers.state(CAROL).ledger.notifications(NOW) == 2
