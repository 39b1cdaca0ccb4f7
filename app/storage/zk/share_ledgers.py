"""The principals' share ledgers (``ShareLedgerZNode``, app/domain/token_share.py): read, decided by the
service's charge, and written compare-and-set inside the token write's own transaction (``add_charge``;
ZkTokenStore's create, change and delete_many).

An unreadable ledger (not the JSON kts writes) is read as empty and rewritten by the next charge, with a
warning: the cluster-wide guard still holds meanwhile, and a principal is not refused for ever by a znode
someone damaged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

from app.domain.principal import KafkaPrincipal
from app.domain.token_share import ShareLedger
from app.service.admission import WriteCharge
from app.storage.zk.errors import refused_read
from app.storage.zk.transaction import ABSENT, ChangeTransaction
from app.storage.zk.znodes import MalformedZNode, ShareLedgerZNode

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LedgerState:
    """One principal's share ledger as read (app/domain/token_share.py): an empty ledger at version
    ``NO_LEDGER`` when it has none yet."""

    ledger: ShareLedger
    version: int


NO_LEDGER = -1


@runtime_checkable
class ShareCharge(WriteCharge, Protocol):
    """The ZooKeeper admission's ``WriteCharge`` (app/storage/zk/admission.py): a charge to one principal's share
    ledger, written in the same transaction as a token write, compare-and-set on the ledger's version: ``decide``
    gets the ledger as read and answers its new state, or raises to refuse the write. On a lost race the store
    reads again and asks again."""

    @property
    def principal(self) -> KafkaPrincipal: ...

    def decide(self, state: LedgerState) -> ShareLedger: ...


def share_charge(charge: WriteCharge) -> ShareCharge:
    """``charge`` as the ledger charge it is: the ZooKeeper store writes only its own admission's charges, and
    anything else is a wiring mistake, refused before anything is written."""
    if not isinstance(charge, ShareCharge):
        raise TypeError(f"not a share ledger charge: {type(charge).__name__}")
    return charge


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
    version = ABSENT if state.version == NO_LEDGER else state.version  # absent: created
    transaction.write(ShareLedgerZNode.path(charge.principal), ShareLedgerZNode.encode(ledger), version)
