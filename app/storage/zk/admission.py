"""The ZooKeeper backend's admission (the ``Admission`` port of app/service/admission.py): the cluster-wide
capacity guard (app/storage/zk/capacity.py) and each principal's write share (app/storage/zk/token_shares.py)
together, since both guard the child lists ZooKeeper-mode brokers must list.

A write is judged on its share first (from the ledger as this replica last saw it), then on the lists' room; the
charge to the share ledger is written in the token write's own transaction (ZkTokenStore) and settled after. A
deletion is never refused: it is charged to the token's requester. Bulk deletions go ``BATCH`` tokens (of at most
``MAX_REQUESTERS_PER_BATCH`` requesters) per ZooKeeper transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager

from app.domain.authorization import Authorizer
from app.domain.principal import KafkaPrincipal
from app.domain.revocation import deletion_batches
from app.domain.token import TokenInformation
from app.domain.token_share import MAX_REQUESTERS_PER_BATCH, ShareWrite
from app.service.admission import TokenWrite, WriteCharge
from app.storage.zk.capacity import CapacityGuard
from app.storage.zk.token_shares import TokenShares

# Tokens deleted per ZooKeeper transaction (the sweep's and bulk revocation's batches). With their notifications
# and the batch's one intent marker a batch is about 100 KB under a short chroot, and 350 KB at worst (64-character
# token ids, a 200-character chroot, creator-only ACLs); with the share ledgers of the most requesters a batch names
# (50, of the longest names), 464 KB: well below ZooKeeper's 1 MB request limit (jute.maxbuffer). Unit tests measure
# both.
BATCH = 500

_SHARE_WRITES = {TokenWrite.CREATE: ShareWrite.CREATE, TokenWrite.RENEW: ShareWrite.CHANGE}


class ZkAdmission:
    def __init__(self, capacity: CapacityGuard, shares: TokenShares, *, authorizer: Authorizer) -> None:
        self.capacity = capacity
        self.shares = shares
        self._authorizer = authorizer

    def judge(self, principal: KafkaPrincipal, write: TokenWrite) -> None:
        self.shares.check(principal, _SHARE_WRITES.get(write, ShareWrite.CHANGE))
        if write is TokenWrite.EXPIRE:
            # An expire that shortens a token's life may use the reserve, and is refused only once the budget
            # itself is used up (a deletion is never asked, so revocation always works).
            self.capacity.admit_expire()
            return
        # Super users may use half of the reserve: when everyone else is refused, operators still issue.
        super_user = self._authorizer.is_super_user(principal)
        if write is TokenWrite.CREATE:
            self.capacity.admit_create(super_user=super_user)
        else:
            self.capacity.admit_renew(super_user=super_user)

    def turn(self, principal: KafkaPrincipal) -> AbstractContextManager[None]:
        return self.shares.turn(principal)

    def charge(self, principal: KafkaPrincipal, write: TokenWrite) -> WriteCharge | None:
        return self.shares.judged(principal, _SHARE_WRITES.get(write, ShareWrite.CHANGE))

    def deletion(self, token: TokenInformation) -> WriteCharge | None:
        return self.shares.deletion(token)

    def deletion_charges(self, tokens: Iterable[TokenInformation]) -> list[WriteCharge]:
        return self.shares.deletion_charges(tokens)

    def settle(self, charges: Iterable[WriteCharge | None]) -> None:
        for charge in charges:
            self.shares.settle(charge)

    def deletion_batches(self, tokens: Iterable[TokenInformation]) -> list[list[TokenInformation]]:
        """Grouped by requester, so that a batch charges few ledgers in its transaction."""
        return deletion_batches(tokens, size=BATCH, max_requesters=MAX_REQUESTERS_PER_BATCH)
