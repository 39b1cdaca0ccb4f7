"""The ZooKeeper admission (app/storage/zk/admission.py): how it judges each kind of write against the share and
the capacity guard, and that its deletion batches fit one ZooKeeper request however long the names are."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from kazoo.exceptions import NoNodeError
from kazoo.protocol.serialization import Transaction as KazooTransaction

from app.domain.acl import AclAuthorizer, AclSnapshot
from app.domain.capacity import ChildList, Purpose
from app.domain.errors import CapacityExhausted
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_share import MAX_REQUESTERS_PER_BATCH, ShareLedger
from app.service.admission import TokenWrite
from app.storage.zk import admission as admission_module
from app.storage.zk.client_security import DigestLogin, ZkClientSecurity
from app.storage.zk.connection import ZkConnection
from app.storage.zk.share_ledgers import LedgerState
from app.storage.zk.token_store import ZkTokenStore
from tests.unit.fakes import NOW, FakeClock, FakeTokenView
from tests.unit.storage.zk.fakes import CAPACITY, FakeChildLists, zk_admission

JUTE_MAXBUFFER = 0xFFFFF  # ZooKeeper's default limit on one request, in bytes
ADMIN = KafkaPrincipal.user("admin")
ALICE = KafkaPrincipal.user("alice")


def _full_for(purpose: Purpose) -> FakeChildLists:
    """Notifications up to what ``purpose`` may use (with one to come per live token: none here)."""
    return FakeChildLists(changes=CAPACITY.max_entries(ChildList.TOKEN_CHANGES, purpose))


def _admission(gauge: FakeChildLists) -> admission_module.ZkAdmission:
    return zk_admission(FakeTokenView(), clock=FakeClock(), authorizer=AclAuthorizer([ADMIN], AclSnapshot), gauge=gauge)


@pytest.mark.parametrize("write", [TokenWrite.CREATE, TokenWrite.RENEW])
def test_creates_and_renews_stop_at_the_issue_limit_where_super_users_go_on(write: TokenWrite) -> None:
    admission = _admission(_full_for(Purpose.ISSUE))
    with pytest.raises(CapacityExhausted):
        admission.judge(ALICE, write)
    admission.judge(ADMIN, write)


def test_an_expire_that_shortens_a_life_may_use_the_reserve() -> None:
    admission = _admission(_full_for(Purpose.SUPER_USER_ISSUE))
    with pytest.raises(CapacityExhausted):
        admission.judge(ADMIN, TokenWrite.RENEW)
    admission.judge(ALICE, TokenWrite.EXPIRE)


def test_deletions_are_ordered_by_requester_and_cut_at_the_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission_module, "BATCH", 2)
    bob = KafkaPrincipal.user("bob")
    tokens = [
        TokenInformation(name, owner, owner, (), NOW, NOW, NOW)
        for name, owner in [("b1", bob), ("a1", ALICE), ("a2", ALICE), ("a3", ALICE)]
    ]
    batches = _admission(FakeChildLists()).deletion_batches(tokens)
    assert [[token.token_id for token in batch] for batch in batches] == [["a1", "a2"], ["a3", "b1"]]


class _MeasuredConnection(ZkConnection):
    """A ZooKeeper connection that never connects: it measures the multi-op request a commit would send (and
    finds no share ledger)."""

    sizes: ClassVar[list[int]] = []

    def commit_results(self, transaction: Any) -> list[Any]:
        self.sizes.append(len(KazooTransaction(transaction.operations).serialize()))
        return [True for _ in transaction.operations]  # applied

    def read_many(self, paths: list[str]) -> list[Any]:
        return [NoNodeError() for _ in paths]


class _FullLedger:
    """A deletion charge to a principal of the longest name, whose ledger holds every minute it can."""

    def __init__(self, n: int) -> None:
        self.principal = KafkaPrincipal.user("é" * 253 + f"{n:02d}")  # each é sanitized as %C3%A9

    def decide(self, state: LedgerState) -> ShareLedger:
        return ShareLedger(tuple((NOW + minute * 60_000, 2**31 - 1) for minute in range(17)))


def test_a_full_batch_stays_well_under_zookeepers_request_limit() -> None:
    """The worst case: the longest token ids, a 200-character chroot and creator-only znode ACLs."""
    _MeasuredConnection.sizes.clear()
    zk = _MeasuredConnection(
        "127.0.0.1:2181/" + "k" * 199,
        session_timeout_ms=18_000,
        security=ZkClientSecurity(set_acl=True, login=DigestLogin("kts", "pw")),
    )
    batch = [(f"{n:064d}", 2**31 - 1, 2**63 - 1 - n) for n in range(admission_module.BATCH)]
    ZkTokenStore(zk).delete_many(batch)
    (size,) = _MeasuredConnection.sizes
    assert size < JUTE_MAXBUFFER // 2, size


def test_a_full_batch_charging_the_most_requesters_stays_under_two_thirds_of_the_request_limit() -> None:
    """The same worst case, each token made by another requester with the longest name: a batch names at most
    MAX_REQUESTERS_PER_BATCH of them, so it writes that many ledgers too."""
    _MeasuredConnection.sizes.clear()
    zk = _MeasuredConnection(
        "127.0.0.1:2181/" + "k" * 199,
        session_timeout_ms=18_000,
        security=ZkClientSecurity(set_acl=True, login=DigestLogin("kts", "pw")),
    )
    batch = [(f"{n:064d}", 2**31 - 1, 2**63 - 1 - n) for n in range(admission_module.BATCH)]
    ZkTokenStore(zk).delete_many(batch, [_FullLedger(n) for n in range(MAX_REQUESTERS_PER_BATCH)])
    (size,) = _MeasuredConnection.sizes
    print(f"worst-case deletion batch with {MAX_REQUESTERS_PER_BATCH} ledger charges: {size} bytes")
    assert size < JUTE_MAXBUFFER * 2 // 3, size
