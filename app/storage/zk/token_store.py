"""Token znodes and their change notifications, written as a broker writes them.

Every change is one ZooKeeper multi-op transaction (transaction.py): the token znode operation (guarded by
the znode version, so concurrent writers cannot lose an update) together with the sequential notification
that tells brokers to re-read it. Either both happen or neither does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

from kazoo.exceptions import NoNodeError

from app.domain.errors import ConcurrentModification, TokenNotFound
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey
from app.domain.token_secret import new_token_id
from app.service.admission import WriteCharge
from app.service.ports import PLAIN_CREATE, CreateTerms, LoadedToken, StoredToken, TokenChange
from app.storage.zk.children_list import list_children_async
from app.storage.zk.compare_and_set import compare_and_set
from app.storage.zk.connection import ZkConnection
from app.storage.zk.errors import Subject, refused_read
from app.storage.zk.multi_read import ReadResult
from app.storage.zk.share_ledgers import LedgerState, ShareCharge, add_charge, ledger_state, share_charge
from app.storage.zk.transaction import ABSENT, ChangeTransaction
from app.storage.zk.znodes import KtsZNodes, MalformedZNode, ShareLedgerZNode, TokenChangeZNode, TokenZNode

log = logging.getLogger(__name__)
R = TypeVar("R")
QUOTA_ATTEMPTS = 32
# A change as this store writes it: the token's new record (None: deleted), the caller's result, the charge.
_Write = tuple[TokenInformation | None, R, WriteCharge | None]


class ZkTokenStore:
    def __init__(self, zk: ZkConnection, *, znode_version: int = 3) -> None:
        if znode_version not in TokenZNode.WRITABLE_VERSIONS:
            raise ValueError("token.znode.version must be 1 or 3")
        self._zk = zk
        self._znode_version = znode_version

    def next_token_id(self) -> str:
        """kts picks the id, as a broker does (app/domain/token_secret.py)."""
        return new_token_id()

    def get(self, token_id: str) -> StoredToken | None:
        found = self._zk.get(TokenZNode.path(token_id))
        return None if found is None else self._decode(token_id, found[0], found[1].version)

    def get_many(
        self, token_ids: list[str], known: Mapping[str, StoredToken] | None = None
    ) -> dict[str, StoredToken | None]:
        """Several tokens (None for those that do not exist or cannot be read), read in few round trips. A token
        whose znode is at the version of its ``known`` state is answered with that state, not decoded: every write
        moves a znode's version on, and token ids are never reused, so the same version holds the same bytes (the
        sweep reads each batch again to judge it as stored, and decoding 100k tokens cost it most of a second)."""
        self._zk.ensure_connected()
        return self._read(token_ids, known or {})

    def _read(self, token_ids: list[str], known: Mapping[str, StoredToken]) -> dict[str, StoredToken | None]:
        answers = self._zk.read_many([TokenZNode.path(token_id) for token_id in token_ids])
        return {
            token_id: self._answered(token_id, answer, known.get(token_id))
            for token_id, answer in zip(token_ids, answers, strict=True)
        }

    def _answered(self, token_id: str, answer: ReadResult, known: StoredToken | None = None) -> StoredToken | None:
        if isinstance(answer, Exception):
            _unread(token_id, answer)
            return None
        data, stat = answer
        if known is not None and known.version == stat.version:
            return known
        return self._decode(token_id, data, stat.version)

    def delete_many(self, deletions: list[tuple[str, int, int | None]], charges: Sequence[WriteCharge] = ()) -> None:
        """Delete several tokens, each guarded by its version, with their notifications (and their events' intent
        marker: one for the batch, ``ChangeTransaction.mark_intents``), in one transaction: all or none. With
        ``charges`` (one per principal), their share ledgers are read, decided and written in the same transaction;
        a ledger another writer moved on meanwhile is read and decided again, while a token that changed refuses
        the batch at once, as without charges."""
        subject = _subject(",".join(token_id for token_id, _, _ in deletions[:3]))
        ledger_charges = [share_charge(charge) for charge in charges]
        intents = [intent for _, _, intent in deletions if intent is not None]

        def attempt() -> None:
            paths = [ShareLedgerZNode.path(charge.principal) for charge in ledger_charges]
            read = self._zk.read_many(paths) if paths else []
            states = [
                ledger_state(charge.principal, answer) for charge, answer in zip(ledger_charges, read, strict=True)
            ]
            transaction = ChangeTransaction(self._zk)
            for token_id, version, _ in deletions:
                transaction.delete(TokenZNode.path(token_id), version)
                transaction.notify(TokenChangeZNode.PREFIX, TokenChangeZNode.encode(token_id))
            transaction.mark_intents(intents)
            for charge, state in zip(ledger_charges, states, strict=True):
                add_charge(transaction, charge, state)
            try:
                transaction.commit(subject)
            except (ConcurrentModification, TokenNotFound):
                if charges and self._ledger_versions(paths) != [state.version for state in states]:
                    raise _LedgerMoved(f"{subject.name}: a share ledger changed meanwhile.") from None
                raise

        compare_and_set(attempt, subject, attempts=QUOTA_ATTEMPTS, retry_on=_LedgerMoved)

    def _ledger_versions(self, paths: list[str]) -> list[int]:
        return [ABSENT if isinstance(answer, Exception) else answer[1].version for answer in self._zk.read_many(paths)]

    def list_batches(self) -> Iterator[list[LoadedToken]]:
        """``list``, a batch of reads at a time as their answers come, while the next batches are being read: a
        caller that indexes each batch as it comes (start-up) does so while ZooKeeper answers the rest. Each token as
        its state and version (``LoadedToken``): the index takes them apart again, and a ``StoredToken`` each was
        some 20 ms of start-up's 100k."""
        self._zk.ensure_connected()
        try:
            # Decoded as the notification lists are (children_list.py): token ids have one length, and kazoo's own
            # decoding of 100k names one at a time was some 0.1 s of start-up.
            token_ids = list(self._zk.wait(list_children_async(self._zk.client, TokenZNode.ROOT, None)))
        except NoNodeError:
            return
        # Decoded a batch at a time: the raw answers of 100k znodes (their data and versions) would otherwise all be
        # held at once, and the memory they take is not given back to the system.
        start = 0
        folder = TokenZNode.path("")  # each token's path is this and its id, as TokenZNode.path writes it
        decode = TokenZNode.decode
        for answers in self._zk.read_version_batches(token_ids, folder):
            batch: list[LoadedToken] = []
            append = batch.append
            for token_id, answer in zip(token_ids[start : start + len(answers)], answers, strict=True):
                if isinstance(answer, Exception):
                    _unread(token_id, answer)
                    continue
                # ``_checked``, written out: a call less for each of start-up's 100k tokens.
                try:
                    token = decode(answer[0])
                except MalformedZNode as exc:
                    _unreadable(token_id, exc)
                    continue
                if token.token_id != token_id:
                    _misnamed(token_id)
                    continue
                append((token, answer[1]))
            start += len(answers)
            yield batch

    def list(self) -> list[StoredToken]:
        """Every readable token (a token deleted between the listing and its read is left out)."""
        return [StoredToken(token, version) for batch in self.list_batches() for token, version in batch]

    def create(self, token: TokenInformation, terms: CreateTerms = PLAIN_CREATE) -> StoredToken:
        """The token znode and its notification in one transaction; with ``quotas``, also each quota guard's
        compare-and-set (znodes/kts.py): the token is written only if no create charged to the same quota
        committed since ``admit`` judged the guards' versions; with ``charge``, likewise its principal's share
        ledger, read in the same round trip. Brokers see the same bytes either way."""
        intent, quotas, admit, charge = terms.intent, terms.quotas, terms.admit, terms.charge
        # Installed by the caller (``terms.installed``): this session's own token cache does not read it back.
        installed = terms.installed
        subject = _subject(token.token_id)
        ledger_charge = None if charge is None else share_charge(charge)
        retried = False

        def attempt() -> StoredToken:
            nonlocal retried
            if retried:  # perhaps lost to a guard version this session's server had not seen yet
                self._zk.sync()
            retried = True
            versions, ledger = self._guard_versions(quotas, ledger_charge)
            if admit is not None:
                admit(versions)
            transaction = ChangeTransaction(self._zk)
            transaction.create(TokenZNode.path(token.token_id), TokenZNode.encode(token, self._znode_version))
            self._notify(transaction, token.token_id, intent, installed=installed)
            for key, version in versions.items():
                transaction.write(KtsZNodes.quota_guard(key), b"", version)
            if ledger_charge is not None and ledger is not None:
                add_charge(transaction, ledger_charge, ledger)
            transaction.commit(subject)
            return StoredToken(token, 0)

        # More rounds than a token change: a replica streaming creates for the same owner wins round after
        # round while this one catches up, and a quota that one replica holds must not starve the other.
        guarded = quotas or charge is not None
        return compare_and_set(attempt, subject, attempts=QUOTA_ATTEMPTS) if guarded else attempt()

    def _guard_versions(
        self, quotas: Sequence[QuotaKey], charge: ShareCharge | None
    ) -> tuple[dict[QuotaKey, int], LedgerState | None]:
        paths = [KtsZNodes.quota_guard(key) for key in quotas]
        if charge is not None:
            paths.append(ShareLedgerZNode.path(charge.principal))
        if not paths:
            return {}, None
        answers = self._zk.read_many(paths)
        versions = {}
        for key, answer in zip(quotas, answers, strict=False):
            if isinstance(answer, NoNodeError):
                versions[key] = ABSENT
            elif isinstance(answer, Exception):
                raise refused_read(answer, f"the quota guard of {key.principal}")
            else:
                versions[key] = answer[1].version
        ledger = None if charge is None else ledger_state(charge.principal, answers[-1])
        return versions, ledger

    def change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[R]], intent: int | None = None
    ) -> tuple[StoredToken | None, R]:
        """Compare-and-set (compare_and_set.py): read the token, let ``decide`` answer the change, write the state
        it planned (None deletes the token; kts writes the record as a broker would, so the request itself is not
        needed) guarded by the version read; on a lost race read and decide again. Returns what was written (None:
        deleted) and ``decide``'s result. TokenNotFound when the token is absent."""

        def write(stored: StoredToken) -> _Write[R]:
            change = decide(stored)
            return change.token, change.result, change.charge

        return self._written(token_id, write, intent)

    def rewrite(
        self, token_id: str, edit: Callable[[StoredToken], TokenInformation], intent: int | None = None
    ) -> StoredToken:
        """Compare-and-set a change of the token's record other than a renew or an expire (``kts cluster
        prepare-migration`` adds a renewer, app/storage/zk/migration_prep.py): ZooKeeper's own, where kts writes
        the record. ``edit`` answers the new record, or raises to give up."""

        written, _ = self._written(token_id, lambda stored: (edit(stored), None, None), intent)
        assert written is not None  # an edit never deletes
        return written

    def _written(
        self, token_id: str, decide: Callable[[StoredToken], _Write[R]], intent: int | None
    ) -> tuple[StoredToken | None, R]:
        def attempt() -> tuple[StoredToken | None, R]:
            stored = self.get(token_id)
            if stored is None:
                raise TokenNotFound(f"Token {token_id} does not exist.")
            token, result, charged = decide(stored)
            new = None if token is None else TokenZNode.encode(token, self._znode_version)
            transaction = ChangeTransaction(self._zk)
            transaction.write(TokenZNode.path(token_id), new, stored.version)
            self._notify(transaction, token_id, intent)
            if charged is not None:
                charge = share_charge(charged)
                path = ShareLedgerZNode.path(charge.principal)
                add_charge(transaction, charge, ledger_state(charge.principal, self._zk.get(path)))
            transaction.commit(_subject(token_id))
            written = None if token is None else StoredToken(token, stored.version + 1)
            return written, result

        return compare_and_set(attempt, _subject(token_id))

    @staticmethod
    def _notify(transaction: ChangeTransaction, token_id: str, intent: int | None, *, installed: bool = False) -> None:
        transaction.notify(TokenChangeZNode.PREFIX, TokenChangeZNode.encode(token_id), installed=installed)
        transaction.mark_intent(intent)

    @classmethod
    def _decode(cls, token_id: str, data: bytes, version: int) -> StoredToken | None:
        token = cls._checked(token_id, data)
        return None if token is None else StoredToken(token, version)

    @staticmethod
    def _checked(token_id: str, data: bytes) -> TokenInformation | None:
        """Like a broker, treat an unreadable token znode as no token, and say so in the log."""
        try:
            token = TokenZNode.decode(data)
        except MalformedZNode as exc:
            _unreadable(token_id, exc)
            return None
        if token.token_id != token_id:
            _misnamed(token_id)
            return None
        return token


class _LedgerMoved(ConcurrentModification):
    """A batch of deletions lost its race on a share ledger only: worth another attempt."""


def _unread(token_id: str, error: Exception) -> None:
    """No token for a path whose znode is gone (deleted since it was listed); any other error refuses the read."""
    if not isinstance(error, NoNodeError):
        raise refused_read(error, f"token {token_id}")


def _unreadable(token_id: str, error: MalformedZNode) -> None:
    log.warning("ignoring unreadable token znode %s: %s", token_id, error)


def _misnamed(token_id: str) -> None:
    log.warning("ignoring token znode %s whose tokenId field names another token", token_id)


def _subject(token_id: str) -> Subject:
    return Subject(f"Token {token_id}", "token", gone=TokenNotFound)
