"""What the use cases need from storage. ZooKeeper adapters in ``app/storage/zk`` implement these."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from app.domain.acl import AccessControlEntry, AclSnapshot, ResourcePattern
from app.domain.capacity import ChildList
from app.domain.credentials import Mechanism, ScramCredential
from app.domain.lockout import Lock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey
from app.domain.token_share import ShareLedger

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class StoredToken:
    token: TokenInformation
    version: int  # the compare-and-set version of the stored record


@dataclass(frozen=True, slots=True)
class LedgerState:
    """One principal's share ledger as read (app/domain/token_share.py): an empty ledger at version
    ``NO_LEDGER`` when it has none yet."""

    ledger: ShareLedger
    version: int


NO_LEDGER = -1


class ShareCharge(Protocol):
    """A charge to one principal's share ledger, written in the same transaction as a token write, compare-and-set
    on the ledger's version: ``decide`` gets the ledger as read and answers its new state, or raises to refuse the
    write. On a lost race the store reads again and asks again."""

    @property
    def principal(self) -> KafkaPrincipal: ...

    def decide(self, state: LedgerState) -> ShareLedger: ...


@dataclass(frozen=True, slots=True)
class TokenChange(Generic[R]):
    """What ``TokenStore.change``'s ``decide`` answers: the token's new state (None deletes it), what the
    caller wants back from the attempt that was written, and the share charge written with it, if any."""

    token: TokenInformation | None
    result: R
    charge: ShareCharge | None = None


class TokenStore(Protocol):
    # ``intent``: a znode created in the same transaction as the change (see app/service/audit.py).

    def get(self, token_id: str) -> StoredToken | None: ...

    def get_many(self, token_ids: list[str]) -> dict[str, StoredToken | None]: ...

    def delete_many(self, deletions: list[tuple[str, int, str | None]], charges: Sequence[ShareCharge] = ()) -> None:
        """Delete each ``(token_id, version judged, intent)`` only if still at that version, all in one
        transaction or none (ConcurrentModification, or TokenNotFound when one is gone). ``charges`` (one per
        principal) are written in the same transaction; a charge whose ledger moved on is decided again."""
        ...

    def list(self) -> list[StoredToken]: ...

    def create(
        self,
        token: TokenInformation,
        intent: str | None = None,
        *,
        quotas: Sequence[QuotaKey] = (),
        admit: Callable[[Mapping[QuotaKey, int]], None] | None = None,
        charge: ShareCharge | None = None,
    ) -> StoredToken:
        """Write a new token. With ``quotas``: read the version of each quota's guard, let ``admit`` judge
        them (it raises to refuse), and write the token only if no guard changed since (a create elsewhere
        charged to the same quota); on a lost race read and admit again. ``admit`` may run several times.
        With ``charge``: its ledger is read, decided and written in the same transaction."""
        ...

    def change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[R]], intent: str | None = None
    ) -> tuple[StoredToken | None, R]:
        """Compare-and-set: read the token, let ``decide`` answer its new state, write that guarded by the
        version read (with the answer's share charge, if any, decided on the ledger as read now); on a lost
        race read and decide again (``decide`` may run several times; what it raises ends the change). Returns
        what was written (None: deleted) and ``decide``'s result. Raises TokenNotFound when the token does not
        exist, ConcurrentModification when it kept changing."""
        ...


class TokenView(Protocol):
    """The replica's in-memory tokens (read paths never ask ZooKeeper)."""

    def get(self, token_id: str) -> StoredToken | None: ...

    def find_by_hmac(self, mac: bytes) -> str | None: ...

    def tokens(self) -> list[StoredToken]: ...

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]: ...

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        """Up to ``count`` tokens in token id order, from the first whose id is greater than ``token_id``
        (None: from the first)."""
        ...

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        """How many tokens count against ``key``'s quota at ``now_ms`` (app/domain/token_quota.py)."""
        ...

    def requested_count(self, principal: KafkaPrincipal) -> int:
        """How many tokens ``principal`` requested (for itself or others), expired ones included: those in
        ZooKeeper, charged to its share (app/domain/token_share.py)."""
        ...

    def expired_count(self, now_ms: int) -> int:
        """How many tokens are past their expiry or maximum at ``now_ms``: what a sweep would delete."""
        ...

    def refresh(self, token_id: str) -> None: ...

    def refresh_latest(self, token_id: str) -> None:
        """``refresh`` after catching up with writes acknowledged anywhere in the ensemble."""
        ...

    def catch_up(self) -> None:
        """Take in every change notified so far (a token made on another replica a moment ago)."""
        ...

    def apply(self, stored: StoredToken) -> None: ...

    def discard(self, token_id: str) -> None: ...


class UserStore(Protocol):
    def credentials(self, user_name: str) -> dict[Mechanism, ScramCredential]: ...

    def put_credential(
        self, user_name: str, mechanism: Mechanism, credential: ScramCredential, intent: str | None = None
    ) -> None: ...

    def delete_credential(self, user_name: str, mechanism: Mechanism, intent: str | None = None) -> None: ...


class AclStore(Protocol):
    def change(
        self,
        pattern: ResourcePattern,
        edit: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
        intent: str | None = None,
    ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]: ...


class AclView(Protocol):
    """The replica's in-memory ACLs."""

    def snapshot(self) -> AclSnapshot: ...

    def refresh(self, pattern: ResourcePattern) -> None: ...


class ChildListGauge(Protocol):
    """The size of the child lists brokers must list (app/domain/capacity.py), read from ZooKeeper."""

    def entries(self) -> dict[ChildList, int]:
        """How many children each list has now (its parent's Stat)."""
        ...

    def oldest_notification_created_ms(self) -> int | None:
        """When the oldest token change notification was created (None: there is none)."""
        ...


class LockoutStore(Protocol):
    """Per-account locks every replica sees (app/domain/lockout.py), and how many replicas share them."""

    def replicas(self) -> int: ...

    def locked_until(self, account: str) -> int | None:
        """The latest end of the account's published locks, expired ones included; None: none."""
        ...

    def publish(self, lock: Lock) -> None: ...

    def release(self, account: str, *, expired_by_ms: int | None = None) -> list[int]:
        """Delete the account's locks (only those ended by ``expired_by_ms`` when given); the ends of the
        locks this call deleted."""
        ...
