"""The fair shares through TokenService over in-memory ports (app/storage/zk/token_shares.py): who each write is
charged to, that a refusal writes nothing and is audited as denied, that two replicas sharing the store take
exactly one share between them, that deletions are never refused but charged to the token's requester, that
super users have no share and a reserve instead, and that an extending expire is admitted as a renew."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, Outcome
from app.domain.authorization import Authorizer, Caller
from app.domain.capacity import CapacityPolicy, ChildList, Purpose
from app.domain.errors import CapacityExhausted, TokenWriteShareExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_rules import CreateRequest
from app.domain.token_share import SharePolicy
from app.service.admission import Admission
from app.service.ports import StoredToken, TokenView
from tests.unit.fakes import NOW, FakeClock, FakeTokenStore
from tests.unit.service.token_harness import ADMIN, ALICE, BOB, DAY, TokenHarness
from tests.unit.storage.zk.fakes import FakeChildLists, zk_admission

SHARE = SharePolicy(200)  # 7 tokens, 7 notification entries: 3 creates
CAPACITY = CapacityPolicy(10_000)


class Replica(TokenHarness):
    """One replica's service over a store shared with the others: its own cache, shares and guard."""

    def __init__(self, store: FakeTokenStore, clock: FakeClock) -> None:
        self.gauge = FakeChildLists()
        super().__init__(clock=clock, store=store, admission_of=self._admission)
        self.shares = self.zk_admission.shares

    def _admission(self, view: TokenView, clock: FakeClock, authorizer: Authorizer) -> Admission:
        self.zk_admission = zk_admission(
            view, clock=clock, authorizer=authorizer, shares=SHARE, gauge=self.gauge, capacity=CAPACITY
        )
        return self.zk_admission

    def create(self, principal: KafkaPrincipal, lifetime_ms: int = -1) -> TokenInformation:
        return self.service.create(Caller(principal, host="192.0.2.1"), CreateRequest(None, (BOB,), lifetime_ms)).token


@pytest.fixture
def store() -> FakeTokenStore:
    return FakeTokenStore()


@pytest.fixture
def replica(store: FakeTokenStore) -> Replica:
    return Replica(store, FakeClock(NOW))


def _notifications(store: FakeTokenStore, principal: KafkaPrincipal) -> int:
    return store.ledgers.state(principal).ledger.notifications(NOW)


def _login(principal: KafkaPrincipal) -> Caller:
    return Caller(principal, host="192.0.2.1")


def test_creates_are_charged_to_the_caller_and_refused_past_its_share_writing_nothing(
    replica: Replica, store: FakeTokenStore
) -> None:
    for _ in range(3):
        replica.create(ALICE, lifetime_ms=1)
    assert (_notifications(store, ALICE), store.ledgers.state(ALICE).version) == (3, 2)
    with pytest.raises(TokenWriteShareExceeded) as refused:
        replica.create(ALICE, lifetime_ms=1)
    assert refused.value.retry_after_s >= 60
    assert len(store.tokens) == 3 and store.ledgers.state(ALICE).version == 2
    denied = replica.log.events()[-1]
    assert (denied.action, denied.outcome, denied.details["error"]) == (
        Action.TOKEN_CREATE,
        Outcome.DENIED,
        "TOKEN_WRITE_SHARE_EXCEEDED",
    )
    assert len(replica.log.appended) == 4  # refused before a pending event: the first judgement
    replica.create(BOB)  # another principal's share is its own


def test_two_replicas_take_exactly_one_share_between_them(store: FakeTokenStore) -> None:
    clock = FakeClock(NOW)
    replicas = [Replica(store, clock), Replica(store, clock)]
    admitted = 0
    for n in range(10):
        try:
            replicas[n % 2].create(ALICE)
            admitted += 1
        except TokenWriteShareExceeded:
            pass
    assert admitted == 3
    assert replicas[1].view.catch_ups >= 1  # it saw the ledger move on elsewhere and took in those tokens


def test_a_stale_first_judgement_is_corrected_when_the_write_reads_the_ledger(store: FakeTokenStore) -> None:
    clock = FakeClock(NOW)
    first, second = Replica(store, clock), Replica(store, clock)
    first.create(ALICE)
    first.create(ALICE)
    second.create(ALICE)  # passes: its own count and ZooKeeper's agree on 2 + 1
    with pytest.raises(TokenWriteShareExceeded):
        first.create(ALICE)  # its last seen ledger said 2: the write read 3 and refused
    assert first.log.events()[-1].outcome is Outcome.DENIED
    assert len(store.tokens) == 3


def test_renews_and_shortening_expires_are_charged_to_the_caller_not_the_owner(
    replica: Replica, store: FakeTokenStore
) -> None:
    token = replica.create(ALICE)
    replica.service.renew(_login(BOB), token.token_id, 1_000)
    replica.service.expire(_login(BOB), token.token_id, 500)
    assert (_notifications(store, ALICE), _notifications(store, BOB)) == (1, 2)


def test_deleting_is_never_refused_and_is_charged_to_the_tokens_requester(
    replica: Replica, store: FakeTokenStore
) -> None:
    tokens = [replica.create(ALICE) for _ in range(3)]
    replica.service.renew(_login(ALICE), tokens[0].token_id, 1_000)  # 4 counted + 3 to come: used up
    with pytest.raises(TokenWriteShareExceeded):
        replica.service.renew(_login(ALICE), tokens[0].token_id, 1_000)
    replica.service.expire(_login(BOB), tokens[0].token_id, -1)  # a renewer deletes it
    assert tokens[0].token_id not in store.tokens
    assert (_notifications(store, ALICE), _notifications(store, BOB)) == (5, 0)
    replica.service.expire(_login(ALICE), tokens[1].token_id, -1)
    assert _notifications(store, ALICE) == 6  # deletions are never refused


def test_a_deleted_tokens_notification_keeps_counting_until_it_is_purged(replica: Replica) -> None:
    for _ in range(3):
        token = replica.create(ALICE)
        replica.service.expire(_login(ALICE), token.token_id, -1)
    with pytest.raises(TokenWriteShareExceeded):  # 6 notifications counted, no token held: 6 + 2 > 7
        replica.create(ALICE)
    replica.clock.advance(17 * 60_000)
    replica.create(ALICE)


def test_super_users_have_no_share_and_keep_a_reserve_of_the_cluster(replica: Replica, store: FakeTokenStore) -> None:
    for _ in range(10):
        replica.create(ADMIN)
    assert ADMIN not in store.ledgers.ledgers
    replica.gauge.counts[ChildList.TOKEN_CHANGES] = CAPACITY.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    with pytest.raises(CapacityExhausted):
        replica.create(BOB)
    replica.create(ADMIN)  # in the reserve


def test_an_extending_expire_is_admitted_as_a_renew_and_audited_as_an_extension(replica: Replica) -> None:
    token = replica.create(ALICE)
    replica.gauge.counts[ChildList.TOKEN_CHANGES] = CAPACITY.max_entries(ChildList.TOKEN_CHANGES, Purpose.ISSUE)
    with pytest.raises(CapacityExhausted):
        replica.service.renew(_login(ALICE), token.token_id, 3 * DAY)
    with pytest.raises(CapacityExhausted):  # the same extension, asked as an expire: no way around
        replica.service.expire(_login(ALICE), token.token_id, 3 * DAY)
    replica.service.expire(_login(ALICE), token.token_id, 1_000)  # shortening: the reserve

    replica.gauge.counts[ChildList.TOKEN_CHANGES] = 0
    change = replica.service.expire(_login(ALICE), token.token_id, 30 * DAY)
    assert change.expiry_timestamp == token.max_timestamp  # capped as a renew is
    expires = [e for e in replica.log.events() if e.action is Action.TOKEN_EXPIRE]
    assert [(e.outcome, e.details.get("extended")) for e in expires] == [
        (Outcome.DENIED, None),
        (Outcome.SUCCEEDED, False),
        (Outcome.SUCCEEDED, True),
    ]
    assert expires[0].details["error"] == "TOKEN_CAPACITY_EXHAUSTED"


def test_an_extending_expire_is_charged_and_refused_past_the_share_as_any_write(replica: Replica) -> None:
    tokens = [replica.create(ALICE) for _ in range(3)]
    replica.service.expire(_login(ALICE), tokens[0].token_id, 3 * DAY)  # the last notification of the share
    with pytest.raises(TokenWriteShareExceeded):
        replica.service.expire(_login(ALICE), tokens[1].token_id, 3 * DAY)


def test_a_batch_of_deletions_charges_each_requester_once_and_super_users_never(
    replica: Replica, store: FakeTokenStore
) -> None:
    made = [replica.create(ALICE), replica.create(ALICE), replica.create(ADMIN)]
    charges = replica.shares.deletion_charges(made)
    assert [charge.principal for charge in charges] == [ALICE]
    store.delete_many([(token.token_id, 0, None) for token in made], charges)
    for charge in charges:
        replica.shares.settle(charge)
    assert store.ledgers.charges == [[ALICE]]
    assert _notifications(store, ALICE) == 4  # two creates, two deletions


def test_with_shares_off_no_ledger_is_written(store: FakeTokenStore) -> None:
    replica = Replica(store, FakeClock(NOW))
    replica.shares.policy = SharePolicy(0)
    for _ in range(10):
        replica.create(ALICE)
    assert store.ledgers.ledgers == {}


def test_a_stored_token_counts_whoever_owns_it(store: FakeTokenStore, replica: Replica) -> None:
    # a token alice made for bob (KIP-373) is alice's
    made_for_bob = TokenInformation("Kip373", BOB, ALICE, (), NOW, NOW + DAY, NOW + DAY)
    store.tokens["Kip373"] = StoredToken(made_for_bob, 0)
    replica.view.catch_up()
    assert replica.view.requested_count(ALICE) == 1 and replica.view.requested_count(BOB) == 0
