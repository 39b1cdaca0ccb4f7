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

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class StoredToken:
    token: TokenInformation
    version: int  # the compare-and-set version of the stored record


@dataclass(frozen=True, slots=True)
class TokenChange(Generic[R]):
    """What ``TokenStore.change``'s ``decide`` answers: the token's new state (None deletes it), and what the
    caller wants back from the attempt that was written."""

    token: TokenInformation | None
    result: R


class TokenStore(Protocol):
    # ``intent``: a znode created in the same transaction as the change (see app/service/audit.py).

    def get(self, token_id: str) -> StoredToken | None: ...

    def get_many(self, token_ids: list[str]) -> dict[str, StoredToken | None]: ...

    def delete_many(self, deletions: list[tuple[str, int, str | None]]) -> None:
        """Delete each ``(token_id, version judged, intent)`` only if still at that version, all in one
        transaction or none (ConcurrentModification, or TokenNotFound when one is gone)."""
        ...

    def list(self) -> list[StoredToken]: ...

    def create(
        self,
        token: TokenInformation,
        intent: str | None = None,
        *,
        quotas: Sequence[QuotaKey] = (),
        admit: Callable[[Mapping[QuotaKey, int]], None] | None = None,
    ) -> StoredToken:
        """Write a new token. With ``quotas``: read the version of each quota's guard, let ``admit`` judge
        them (it raises to refuse), and write the token only if no guard changed since (a create elsewhere
        charged to the same quota); on a lost race read and admit again. ``admit`` may run several times."""
        ...

    def change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[R]], intent: str | None = None
    ) -> tuple[StoredToken | None, R]:
        """Compare-and-set: read the token, let ``decide`` answer its new state, write that guarded by the
        version read; on a lost race read and decide again (``decide`` may run several times; what it raises
        ends the change). Returns what was written (None: deleted) and ``decide``'s result. Raises
        TokenNotFound when the token does not exist, ConcurrentModification when it kept changing."""
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
    """Per-account locks every replica sees (app/domain/lockout.py), and how many replicas share them.

    Accounts are named by their key (``account_key``: a hash of the whole name). A lock lasts its duration from
    when the store took it, by the store's own clock: no replica's clock decides when a lock ends. The store
    holds a bounded number of locks in force; ended ones do not count, and the leader deletes them."""

    def replicas(self) -> int:
        """How many replicas are live (each locks an account after its share of the threshold)."""
        ...

    def locked_ms(self, key: str) -> int:
        """How much longer the account's shared locks last; 0 when none is in force."""
        ...

    def share(self, lock: Lock) -> bool:
        """Take the lock, for every replica; False (nothing written) when the store holds as many locks in
        force as it may. Raises StoreUnavailable when the store cannot be written."""
        ...

    def release(self, key: str, duration_ms: int) -> bool:
        """End the account's shared locks, and have every replica forget its own lock and count of the account
        (``on_released``), for ``duration_ms`` (the longest a lock it releases can last); whether a shared lock
        was in force. Raises StoreUnavailable when the store cannot be written."""
        ...

    def on_released(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(key)`` for each release any replica makes (this one's included), soon after."""
        ...

    def remove_ended(self) -> int:
        """Delete the locks that have ended, and releases older than their duration; how many locks. Run by
        the leader alone."""
        ...
