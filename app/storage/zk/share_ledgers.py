"""The principals' share ledgers (``ShareLedgerZNode``, app/domain/token_share.py): read, decided by the
service's charge, and written compare-and-set, either inside a token write's transaction (``add_charge``) or
on their own (``ZkShareLedgers.charge``: the sweep's and bulk revocation's deletions).

An unreadable ledger (not the JSON kts writes) is read as empty and rewritten by the next charge, with a
warning: the cluster-wide guard still holds meanwhile, and a principal is not refused for ever by a znode
someone damaged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from app.domain.principal import KafkaPrincipal
from app.domain.token_share import ShareLedger
from app.service.ports import NO_LEDGER, LedgerState, ShareCharge
from app.storage.zk.compare_and_set import compare_and_set
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject, refused_read
from app.storage.zk.transaction import ABSENT, ChangeTransaction
from app.storage.zk.znodes import MalformedZNode, ShareLedgerZNode

log = logging.getLogger(__name__)
# Deletions are never refused, so their charges must not give up easily either: a principal writing on
# other replicas moves its ledger on, and each lost round reads it again.
ATTEMPTS = 32

assert NO_LEDGER == ABSENT  # a ledger read as absent is created, as any znode written from ABSENT


def ledger_state(principal: KafkaPrincipal, answer: tuple[bytes, ZnodeStat] | Exception | None) -> LedgerState:
    """The state of ``principal``'s ledger from a read's answer (None or NoNodeError: it has none yet)."""
    if answer is None or isinstance(answer, NoNodeError):
        return LedgerState(ShareLedger(), NO_LEDGER)
    if isinstance(answer, Exception):
        raise refused_read(answer, f"the share ledger of {principal}")
    data, stat = answer
    try:
        ledger = ShareLedgerZNode.decode(data)
    except MalformedZNode as exc:
        log.warning("reading the unreadable share ledger of %s as empty: %s", principal, exc)
        ledger = ShareLedger()
    return LedgerState(ledger, stat.version)


def add_charge(transaction: ChangeTransaction, charge: ShareCharge, state: LedgerState) -> None:
    """Decide ``charge`` on ``state`` (it may refuse) and add the ledger's compare-and-set to ``transaction``."""
    ledger = charge.decide(state)
    transaction.write(ShareLedgerZNode.path(charge.principal), ShareLedgerZNode.encode(ledger), state.version)


class ZkShareLedgers:
    def __init__(self, zk: ZkConnection) -> None:
        self._zk = zk

    def charge(self, charges: Sequence[ShareCharge]) -> None:
        """Every charge's ledger read, decided and written in one transaction; all or none, retried on a lost
        race. At most one charge per principal."""
        if not charges:
            return
        principals = [charge.principal for charge in charges]
        subject = Subject(f"The share ledgers of {principals[0]} and others", "share ledger")

        def attempt() -> None:
            answers = self._zk.read_many([ShareLedgerZNode.path(principal) for principal in principals])
            transaction = ChangeTransaction(self._zk)
            for charge, answer in zip(charges, answers, strict=True):
                add_charge(transaction, charge, ledger_state(charge.principal, answer))
            transaction.commit(subject)

        compare_and_set(attempt, subject, attempts=ATTEMPTS)
