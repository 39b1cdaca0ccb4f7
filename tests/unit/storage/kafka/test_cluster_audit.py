"""The audit reconciler for clusters without intent markers (app/storage/kafka/cluster_audit.py) over in-memory ports:
every kill point of a create settles consistently, tokens no event names are adopted or given a
reconstructed event, renews and expires are settled by their mark or the token's state, other changes by
their mark, and a pass is idempotent."""

from __future__ import annotations

import threading

import pytest

from app.domain.audit import Action, AuditEvent, Outcome, StoredEvent
from app.domain.errors import StoreUnavailable
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.service.audit import RECONCILE_GRACE_MS
from app.storage.kafka.cluster_audit import ClusterAuditReconciler, Reconciliation
from tests.unit.fakes import NOW, FakeClock, FakeIntentStore, FakeTrail

KTS = KafkaPrincipal.user("kts")
ALICE = KafkaPrincipal.user("alice")
DAY = 86_400_000
ASKED_AT = NOW - RECONCILE_GRACE_MS - 10_000  # old enough to settle


class Cluster:
    def __init__(self, *tokens: TokenInformation) -> None:
        self.tokens = list(tokens)
        self.down = False

    def list_tokens(self) -> list[TokenInformation]:
        if self.down:
            raise StoreUnavailable("The cluster is not reachable right now; retry shortly.")
        return list(self.tokens)


def made(token_id: str, *, issued: int = ASKED_AT + 50, requester: KafkaPrincipal = KTS) -> TokenInformation:
    return TokenInformation(token_id, ALICE, requester, (KTS,), issued, issued + DAY, issued + 7 * DAY)


def asked(trail: FakeTrail, *, at: int = ASKED_AT, token_id: str = "PlannedByKts") -> int:
    """A create's pending event, as the token service writes it (kts's own id until the cluster picks one)."""
    event = AuditEvent(
        Action.TOKEN_CREATE,
        Outcome.PENDING,
        principal="User:alice",
        owner="User:alice",
        token_requester="User:alice",
        token_id=token_id,
        details={"requestedMaxLifetimeMs": -1, "renewers": []},
    )
    return trail.write(event, at_ms=at)


def reconciler(
    trail: FakeTrail, cluster: Cluster, marks: FakeIntentStore | None = None, **options: object
) -> ClusterAuditReconciler:
    return ClusterAuditReconciler(
        trail,
        trail,
        cluster,
        marks or FakeIntentStore(),
        clock=FakeClock(),
        own_principal=lambda: KTS,
        default_renew_ms=DAY,
        **options,  # type: ignore[arg-type]
    )


def outcome(trail: FakeTrail, event_id: int) -> tuple[str, str | None]:
    stored = trail.events[event_id]
    return stored.outcome, stored.token_id


def test_killed_before_the_rpc_the_create_settles_failed() -> None:
    trail = FakeTrail()
    event_id = asked(trail)

    done = reconciler(trail, Cluster()).reconcile()

    assert done == Reconciliation(not_applied=1)
    assert outcome(trail, event_id) == ("failed", "PlannedByKts")
    assert trail.events[event_id].details["reconciled"] is True


def test_killed_after_the_rpc_the_create_settles_with_the_clusters_token() -> None:
    trail = FakeTrail()
    event_id = asked(trail)

    done = reconciler(trail, Cluster(made("RealId"))).reconcile()

    assert done == Reconciliation(applied=1)
    assert outcome(trail, event_id) == ("succeeded", "RealId")
    assert trail.events[event_id].details["issueTimestamp"] == ASKED_AT + 50
    assert trail.ledger["RealId"] == (event_id, "User:alice", False)  # the HTTP caller, not kts


def test_killed_after_recording_the_token_the_create_settles_with_the_recorded_token() -> None:
    trail = FakeTrail()
    event_id = asked(trail)
    trail.record("RealId", requester="User:alice", event_id=event_id)

    done = reconciler(trail, Cluster()).reconcile()  # the token is gone by now: it existed all the same

    assert done == Reconciliation(applied=1)
    assert outcome(trail, event_id) == ("succeeded", "RealId")


def test_events_in_their_grace_period_are_left_to_their_requests() -> None:
    trail = FakeTrail()
    event_id = asked(trail, at=NOW - 1000)
    young = made("Young", issued=NOW - 900)

    assert reconciler(trail, Cluster(young)).reconcile() == Reconciliation()
    assert outcome(trail, event_id) == ("pending", "PlannedByKts")
    assert trail.ledger == {}  # nor is its token adopted: its request records it


def test_two_creates_and_one_token_the_older_create_made_it() -> None:
    trail = FakeTrail()
    first = asked(trail, at=ASKED_AT)
    second = asked(trail, at=ASKED_AT + 1000)

    reconciler(trail, Cluster(made("OnlyOne", issued=ASKED_AT + 1500))).reconcile()

    assert outcome(trail, first) == ("succeeded", "OnlyOne")
    assert outcome(trail, second) == ("failed", "PlannedByKts")


def test_a_token_that_landed_after_its_create_was_settled_failed_gets_a_reconstructed_event() -> None:
    trail = FakeTrail()
    event_id = asked(trail)
    cluster = Cluster()
    reconciler(trail, cluster).reconcile()
    assert outcome(trail, event_id)[0] == "failed"
    cluster.tokens.append(made("Late", issued=ASKED_AT + 5_000))  # the controller committed it late

    done = reconciler(trail, cluster).reconcile()

    assert done == Reconciliation(reconstructed=1)
    (rebuilt,) = [e for e in trail.events.values() if e.token_id == "Late"]
    assert (rebuilt.action, rebuilt.outcome, rebuilt.owner) == ("token.create", "succeeded", "User:alice")
    assert rebuilt.token_requester == "User:kts"  # who asked is not known: the cluster's record says kts
    assert rebuilt.details["reconstructed"] is True
    assert reconciler(trail, cluster).reconcile() == Reconciliation()  # once


def test_a_token_whose_create_event_names_it_is_adopted_without_a_second_event() -> None:
    trail = FakeTrail()
    event_id = asked(trail)
    trail.complete_many([(event_id, AuditEvent(Action.TOKEN_CREATE, Outcome.SUCCEEDED, token_id="RealId"))])

    done = reconciler(trail, Cluster(made("RealId"))).reconcile()

    assert done == Reconciliation(adopted=1)
    assert trail.ledger["RealId"] == (event_id, "User:alice", False)
    assert len(trail.events) == 1


def test_records_older_than_the_longest_token_life_are_forgotten_when_asked() -> None:
    trail = FakeTrail()
    reconciler(trail, Cluster()).reconcile()
    assert trail.forgotten_after is None
    reconciler(trail, Cluster(), forget_after_ms=8 * DAY).reconcile()
    assert trail.forgotten_after == 8 * DAY


def test_an_expired_token_no_event_names_is_left_alone() -> None:
    """It can neither log in nor be renewed (kts's own start-up probes are such tokens)."""
    trail = FakeTrail()
    probe = TokenInformation("Probe", KTS, KTS, (), ASKED_AT, ASKED_AT + 60_000, ASKED_AT + 60_000)
    assert reconciler(trail, Cluster(probe)).reconcile() == Reconciliation()
    assert trail.events == {}


def test_tokens_other_principals_made_are_not_kts_s_to_account_for() -> None:
    trail = FakeTrail()
    assert reconciler(trail, Cluster(made("ByAlice", requester=ALICE))).reconcile() == Reconciliation()
    assert trail.events == {} and trail.ledger == {}


def test_renews_and_expires_settle_by_the_tokens_state() -> None:
    trail = FakeTrail()
    renewed = made("Renewed", issued=ASKED_AT - DAY).with_expiry(ASKED_AT + DAY + 100)
    stale = made("Stale", issued=ASKED_AT - DAY // 2)  # expires half a day after the events
    for token in (renewed, stale):  # kts made them long ago, with their events
        trail.record(token.token_id, requester="User:alice", event_id=None)

    def change(action: Action, token_id: str, **details: object) -> int:
        return trail.write(
            AuditEvent(action, Outcome.PENDING, token_id=token_id, details=dict(details)), at_ms=ASKED_AT
        )

    renew_applied = change(Action.TOKEN_RENEW, "Renewed", renewTimePeriodMs=DAY)
    renew_lost = change(Action.TOKEN_RENEW, "Stale", renewTimePeriodMs=DAY)
    expire_gone = change(Action.TOKEN_EXPIRE, "Gone", expiryTimePeriodMs=-1)
    expire_lost = change(Action.TOKEN_EXPIRE, "Stale", expiryTimePeriodMs=-1)

    done = reconciler(trail, Cluster(renewed, stale)).reconcile()

    assert done == Reconciliation(applied=2, not_applied=2)
    assert outcome(trail, renew_applied)[0] == "succeeded"
    assert trail.events[renew_applied].details["expiryTimestamp"] == ASKED_AT + DAY + 100
    assert outcome(trail, renew_lost)[0] == "failed"
    assert outcome(trail, expire_gone)[0] == "succeeded"
    assert outcome(trail, expire_lost)[0] == "failed"


def test_a_mark_settles_a_change_applied_whatever_the_state_and_marks_of_settled_events_go() -> None:
    trail = FakeTrail()
    marks = FakeIntentStore()
    stale = made("Stale", issued=ASKED_AT - DAY // 2)
    trail.record(stale.token_id, requester="User:alice", event_id=None)
    renew = trail.write(
        AuditEvent(Action.TOKEN_RENEW, Outcome.PENDING, token_id="Stale", details={"renewTimePeriodMs": DAY}),
        at_ms=ASKED_AT,
    )
    acl_marked = trail.write(AuditEvent(Action.ACL_ADD, Outcome.PENDING), at_ms=ASKED_AT)
    acl_unmarked = trail.write(AuditEvent(Action.ACL_ADD, Outcome.PENDING), at_ms=ASKED_AT)
    young = trail.write(AuditEvent(Action.ACL_ADD, Outcome.PENDING), at_ms=NOW - 1000)
    marks.present |= {renew, acl_marked, young, 999}  # 999: an event the trail no longer has

    done = reconciler(trail, Cluster(stale), marks).reconcile()

    assert done == Reconciliation(applied=2, not_applied=1)
    assert [outcome(trail, e)[0] for e in (renew, acl_marked, acl_unmarked, young)] == [
        "succeeded",  # the renew's mark, although the state alone would not show it
        "succeeded",
        "failed",
        "pending",
    ]
    assert marks.present == {young}  # its request is still in flight


def test_a_judge_can_look_at_the_cluster_for_unmarked_changes() -> None:
    trail = FakeTrail()
    applied = trail.write(AuditEvent(Action.ACL_ADD, Outcome.PENDING, details={"n": 1}), at_ms=ASKED_AT)
    unsure = trail.write(AuditEvent(Action.ACL_ADD, Outcome.PENDING, details={"n": 2}), at_ms=ASKED_AT)

    def judge(stored: StoredEvent) -> Outcome | None:
        return Outcome.SUCCEEDED if stored.details["n"] == 1 else None

    assert reconciler(trail, Cluster(), judge_other=judge).reconcile() == Reconciliation(applied=1, left_pending=1)
    assert outcome(trail, applied)[0] == "succeeded" and outcome(trail, unsure)[0] == "pending"


def test_the_leaders_duty_passes_until_leadership_is_lost_and_outlives_an_unreachable_cluster() -> None:
    trail = FakeTrail()
    cluster = Cluster()
    cluster.down = True
    lost = threading.Event()
    passes: list[int] = []
    duty = reconciler(trail, cluster, interval_s=0.01)
    real = duty.reconcile

    def counted() -> Reconciliation:
        passes.append(1)
        if len(passes) == 3:
            lost.set()
        return real()

    duty.reconcile = counted  # type: ignore[method-assign]
    duty.run(lost)  # returns: lost was set on the third pass; the failures before were postponements

    assert len(passes) == 3


@pytest.mark.parametrize("kill_point", ["before-rpc", "after-rpc", "after-record", "completed"])
def test_every_kill_point_leaves_each_kts_token_with_one_succeeded_create(kill_point: str) -> None:
    trail = FakeTrail()
    cluster = Cluster()
    event_id = asked(trail)
    if kill_point != "before-rpc":
        cluster.tokens.append(made("RealId"))
    if kill_point in ("after-record", "completed"):
        trail.record("RealId", requester="User:alice", event_id=event_id)
    if kill_point == "completed":
        trail.complete_many([(event_id, AuditEvent(Action.TOKEN_CREATE, Outcome.SUCCEEDED, token_id="RealId"))])

    reconciler(trail, cluster).reconcile()

    assert [e for e in trail.events.values() if e.outcome == "pending"] == []
    for token in cluster.tokens:
        creates = [e for e in trail.events.values() if e.token_id == token.token_id and e.outcome == "succeeded"]
        assert len(creates) == 1
    assert outcome(trail, event_id)[0] == ("failed" if kill_point == "before-rpc" else "succeeded")
