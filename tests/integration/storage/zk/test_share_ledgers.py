"""Share ledgers on a real ZooKeeper (app/storage/zk/share_ledgers.py, ZkTokenStore's charges): a charge is
written in the token write's own transaction, guarded by the ledger's version, so a charge made elsewhere in
between makes the write decide again; a refused charge writes nothing; a batch of deletions charges several
principals in its transaction, is charged again after losing a race on a ledger and refused at once when a
token changed; a damaged ledger is read as empty."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from app.domain.errors import ConcurrentModification, TokenWriteShareExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_share import ShareLedger
from app.service.ports import CreateTerms, Renewal, StoredToken, TokenChange
from app.storage.zk.connection import ZkConnection
from app.storage.zk.share_ledgers import LedgerState
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.znodes import KtsZNodes, ShareLedgerZNode, TokenChangeZNode, TokenZNode

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
MINUTE = 1_700_000_040_000


class Charge:
    """Adds ``count`` notifications at MINUTE; ``refuse`` raises instead; ``between`` runs once, after the
    first read (another replica's write)."""

    def __init__(self, principal: KafkaPrincipal, count: int = 1, *, refuse: bool = False) -> None:
        self.principal = principal
        self.count = count
        self.refuse = refuse
        self.seen: list[LedgerState] = []
        self.between: list[Callable[[], object]] = []

    def decide(self, state: LedgerState) -> ShareLedger:
        self.seen.append(state)
        if self.refuse:
            raise TokenWriteShareExceeded("over its share")
        if self.between:
            self.between.pop()()
        return state.ledger.charged(self.count, MINUTE)


def _token(token_id: str, requester: KafkaPrincipal = ALICE) -> TokenInformation:
    return TokenInformation(token_id, requester, requester, (), 1000, 2000, 9000)


def _ledger(raw_zk: KazooClient, principal: KafkaPrincipal) -> tuple[ShareLedger, int]:
    data, stat = raw_zk.get(ShareLedgerZNode.path(principal))
    return ShareLedgerZNode.decode(data), stat.version


def test_a_create_writes_its_charge_in_its_transaction_and_decides_again_after_a_charge_in_between(
    zk: ZkConnection, zk_connect: str, raw_zk: KazooClient
) -> None:
    store = ZkTokenStore(zk)
    first = Charge(ALICE)
    store.create(_token("ChargedFirstAAAAAAAAAA"), CreateTerms(charge=first))
    assert [state.version for state in first.seen] == [-1]  # no ledger yet
    assert _ledger(raw_zk, ALICE) == (ShareLedger(((MINUTE, 1),)), 0)

    other = ZkConnection(zk_connect, session_timeout_ms=6000)
    other.start()
    try:
        second = Charge(ALICE)
        second.between.append(
            lambda: ZkTokenStore(other).create(_token("ElsewhereAAAAAAAAAAAAA"), CreateTerms(charge=Charge(ALICE)))
        )
        store.create(_token("ChargedSecondAAAAAAAAA"), CreateTerms(charge=second))
    finally:
        other.stop()
    assert [state.version for state in second.seen] == [0, 1]  # lost once, judged again on what the other wrote
    assert _ledger(raw_zk, ALICE) == (ShareLedger(((MINUTE, 3),)), 2)


def test_a_refused_charge_writes_neither_the_token_nor_its_notification(zk: ZkConnection, raw_zk: KazooClient) -> None:
    with pytest.raises(TokenWriteShareExceeded):
        ZkTokenStore(zk).create(_token("RefusedAAAAAAAAAAAAAAA"), CreateTerms(charge=Charge(ALICE, refuse=True)))
    assert raw_zk.exists(TokenZNode.path("RefusedAAAAAAAAAAAAAAA")) is None
    assert raw_zk.get_children(TokenChangeZNode.ROOT) == []
    assert raw_zk.get_children(KtsZNodes.TOKEN_SHARES) == []


def test_a_change_carries_the_charge_its_decision_names(zk: ZkConnection, raw_zk: KazooClient) -> None:
    store = ZkTokenStore(zk)
    store.create(_token("ChangedAAAAAAAAAAAAAAA"))

    def renew(stored: StoredToken) -> TokenChange[None]:
        return TokenChange(stored.token.with_expiry(3000), None, Renewal(-1), charge=Charge(BOB))

    store.change("ChangedAAAAAAAAAAAAAAA", renew)
    assert _ledger(raw_zk, BOB) == (ShareLedger(((MINUTE, 1),)), 0)
    assert raw_zk.exists(ShareLedgerZNode.path(ALICE)) is None


def test_a_batch_of_deletions_charges_several_principals_in_its_transaction_and_charges_again_after_a_race(
    zk: ZkConnection, zk_connect: str, raw_zk: KazooClient
) -> None:
    store = ZkTokenStore(zk)
    for token_id, requester in (("DelAliceAAAAAAAAAAAAAA", ALICE), ("DelBobAAAAAAAAAAAAAAAA", BOB)):
        store.create(_token(token_id, requester))
    other = ZkConnection(zk_connect, session_timeout_ms=6000)
    other.start()
    try:
        alice = Charge(ALICE, 1)
        alice.between.append(
            lambda: ZkTokenStore(other).create(_token("AliceElsewhereAAAAAAAA"), CreateTerms(charge=Charge(ALICE)))
        )
        store.delete_many(
            [("DelAliceAAAAAAAAAAAAAA", 0, None), ("DelBobAAAAAAAAAAAAAAAA", 0, None)], [alice, Charge(BOB, 1)]
        )
    finally:
        other.stop()
    assert [state.version for state in alice.seen] == [-1, 0]  # lost to the create elsewhere, charged again
    assert _ledger(raw_zk, ALICE) == (ShareLedger(((MINUTE, 2),)), 1)
    assert _ledger(raw_zk, BOB) == (ShareLedger(((MINUTE, 1),)), 0)
    assert raw_zk.get_children(TokenZNode.ROOT) == ["AliceElsewhereAAAAAAAA"]


def test_a_batch_with_a_changed_token_is_refused_at_once_and_charges_nothing(
    zk: ZkConnection, raw_zk: KazooClient
) -> None:
    store = ZkTokenStore(zk)
    store.create(_token("ChangedMeanwhileAAAAAA"))
    raw_zk.set(TokenZNode.path("ChangedMeanwhileAAAAAA"), raw_zk.get(TokenZNode.path("ChangedMeanwhileAAAAAA"))[0])
    charge = Charge(ALICE)
    with pytest.raises(ConcurrentModification):
        store.delete_many([("ChangedMeanwhileAAAAAA", 0, None)], [charge])
    assert len(charge.seen) == 1  # not retried: the sweep takes the token on its own
    assert raw_zk.exists(ShareLedgerZNode.path(ALICE)) is None


def test_a_damaged_ledger_is_read_as_empty_and_rewritten(
    zk: ZkConnection, raw_zk: KazooClient, caplog: pytest.LogCaptureFixture
) -> None:
    raw_zk.create(ShareLedgerZNode.path(ALICE), b"not json")
    charge = Charge(ALICE)
    ZkTokenStore(zk).create(_token("AfterDamageAAAAAAAAAAA"), CreateTerms(charge=charge))
    assert charge.seen == [LedgerState(ShareLedger(), 0)]
    assert _ledger(raw_zk, ALICE) == (ShareLedger(((MINUTE, 1),)), 1)
    assert "unreadable share ledger of User:alice" in caplog.text
