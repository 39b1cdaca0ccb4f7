"""What the use cases need from storage. Two backends implement these: ZooKeeper (``app/storage/zk``), which kts
writes as a broker would, with compare-and-set and ids kts picks; and the Kafka protocol (``app/storage/kafka``),
where the controller makes each change, picks token ids and times, and kts only asks. The ports are what both
backends do (the Kafka protocol's own, the database its replicas share, are in app/storage/kafka/ports.py; the
admission each supplies, in app/service/admission.py), so that the services decide the same way over both."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from app.domain.acl import AccessControlEntry, AclSnapshot, ResourcePattern
from app.domain.credentials import Mechanism, ScramCredential, Verdict
from app.domain.lockout import Lock, LockInForce
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey
from app.service.admission import WriteCharge

R = TypeVar("R")


# init=False, as TokenInformation (app/domain/token.py): a frozen dataclass's own ``__init__`` sets each field with
# ``object.__setattr__`` by name, half the cost of making one, and start-up makes one per token (and the cache one
# per read). Same arguments, same fields; still frozen.
@dataclass(frozen=True, slots=True, init=False)
class StoredToken:
    token: TokenInformation
    version: int  # the compare-and-set version of the stored record

    def __init__(self, token: TokenInformation, version: int) -> None:
        _set_token(self, token)
        _set_version(self, version)


_set_token = vars(StoredToken)["token"].__set__
_set_version = vars(StoredToken)["version"].__set__

# A ``StoredToken``'s two fields as a plain pair: what a load of every token (start-up's) gives the cache's index,
# which takes them apart again (app/storage/token_index.py); making a StoredToken of each was some 20 ms of 100k.
LoadedToken = tuple[TokenInformation, int]


@dataclass(frozen=True, slots=True)
class Renewal:
    """A renew as Kafka's RenewDelegationToken asks it: ``period_ms`` < 0 means the cluster's default."""

    period_ms: int


@dataclass(frozen=True, slots=True)
class Expiry:
    """An expire as Kafka's ExpireDelegationToken asks it: ``period_ms`` < 0 means now."""

    period_ms: int


EXPIRE_NOW = Expiry(-1)  # a deletion, as Kafka asks it


@dataclass(frozen=True, slots=True)
class TokenChange(Generic[R]):
    """What ``TokenStore.change``'s ``decide`` answers: one renew or expire (``request``, as Kafka's RPCs ask it: a
    deletion is ``EXPIRE_NOW``) with the token's state after it as kts's rules planned it (``token``; None: it
    goes), what the caller wants back from the attempt that was written, and what the backend's admission writes
    with it (``charge``, app/service/admission.py). Every store gets both forms of the one change and makes it its
    way: where kts writes the record (ZooKeeper) it writes ``token``, with the charge in the same transaction;
    where the cluster makes the change (the Kafka protocol) it sends ``request`` and answers the state the cluster
    reports, which may differ from ``token`` (a KRaft controller never renews past
    ``delegation.token.expiry.time.ms``)."""

    token: TokenInformation | None
    result: R
    request: Renewal | Expiry
    charge: WriteCharge | None = None


@dataclass(frozen=True, slots=True)
class CreateTerms:
    """What a token create is written under beside the token (``TokenStore.create``): the audit intent marker of
    the change (app/service/audit.py), the quotas whose guards it is charged to with ``admit`` judging their
    versions, and the admission's charge written with it (app/service/admission.py). ``installed``: the caller
    installs the token answered in this replica's token view itself (``TokenView.apply``), so a store whose view
    follows change notifications need not have it read the token back on its own notification."""

    intent: int | None = None
    quotas: Sequence[QuotaKey] = ()
    admit: Callable[[Mapping[QuotaKey, int]], None] | None = None
    charge: WriteCharge | None = None
    installed: bool = False


PLAIN_CREATE = CreateTerms()


class TokenStore(Protocol):
    # ``intent``: the id of the change's pending audit event (app/service/audit.py), which the store marks its own
    # way: ZooKeeper creates a marker znode in the change's transaction, the Kafka protocol marks it in the database
    # the replicas share once the cluster answered (app/storage/kafka/ports.py, IntentMarks).

    def next_token_id(self) -> str | None:
        """The id of the next token to create, or None when the cluster picks it (``create`` answers it)."""
        ...

    def get(self, token_id: str) -> StoredToken | None: ...

    def get_many(
        self, token_ids: list[str], known: Mapping[str, StoredToken] | None = None
    ) -> dict[str, StoredToken | None]:
        """Each token as stored now (None: absent). ``known``: states the caller holds (its cache's); a token still
        at a known state's version may be answered with that state rather than decoded again."""
        ...

    def delete_many(self, deletions: list[tuple[str, int, int | None]], charges: Sequence[WriteCharge] = ()) -> None:
        """Delete each ``(token_id, version judged, intent)`` only if still at that version, all in one
        transaction or none (ConcurrentModification, or TokenNotFound when one is gone). ``charges`` (one per
        principal) are written in the same transaction; a charge whose ledger moved on is decided again. The
        intents are one batch's: a store may mark them with one marker (``IntentStore.clear_batch`` clears it)."""
        ...

    def list(self) -> list[StoredToken]: ...

    def create(self, token: TokenInformation, terms: CreateTerms = PLAIN_CREATE) -> StoredToken:
        """Write a new token under ``terms`` (its audit intent, quota guards and admission charge). With
        ``quotas``: read the version of each quota's guard, let ``admit`` judge
        them (it raises to refuse), and write the token only if no guard changed since (a create elsewhere
        charged to the same quota); on a lost race read and admit again. ``admit`` may run several times.
        Answers the token as stored: where the cluster picks the id and times, they are the cluster's, and the
        owner, requester and renewers those of ``token`` (a cluster that records kts's own principal as the
        requester does not change who asked). With ``charge`` (ZooKeeper): its ledger is read, decided and written
        in the same transaction."""
        ...

    def change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[R]], intent: int | None = None
    ) -> tuple[StoredToken | None, R]:
        """Compare-and-set: read the token, let ``decide`` answer its new state, write that guarded by the
        version read (with the answer's share charge, if any, decided on the ledger as read now); on a lost
        race read and decide again (``decide`` may run several times; what it raises ends the change). Returns
        what was written (None: deleted) and ``decide``'s result. Raises TokenNotFound when the token does not
        exist, ConcurrentModification when it kept changing."""
        ...


class TokenView(Protocol):
    """The replica's in-memory tokens (read paths never ask the cluster)."""

    def get(self, token_id: str) -> StoredToken | None: ...

    def lookup(self, token_id: str) -> StoredToken | None:
        """``get`` for a Bearer login or a verify: a view that lags behind the cluster (one that polls it) may
        refresh once first, rate-limited; one that follows every change answers ``get``."""
        ...

    def find_by_hmac(self, mac: bytes) -> str | None: ...

    def tokens(self) -> list[StoredToken]: ...

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]: ...

    def related_tokens(self, principals: Iterable[KafkaPrincipal]) -> list[TokenInformation]:
        """``related_to``'s tokens without their versions, for readers that only show them (a describe): no
        ``StoredToken`` built per token (a tenth of what a describe of 100 tokens costs beyond a static page)."""
        ...

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
        """``refresh`` after catching up with writes acknowledged anywhere in the cluster."""
        ...

    def catch_up(self) -> None:
        """Take in every change notified so far (a token made on another replica a moment ago)."""
        ...

    def apply(self, stored: StoredToken) -> None: ...

    def discard(self, token_id: str) -> None: ...

    def discard_many(self, token_ids: list[str]) -> None:
        """``discard`` for each of ``token_ids`` (a sweep's batch), at once."""
        ...


class UserStore(Protocol):
    def mechanisms(self, user_name: str) -> dict[Mechanism, int]:
        """The user's SCRAM mechanisms and their iteration counts (what a cluster that keeps keys to itself
        tells: no salt, no key)."""
        ...

    def put_credential(
        self, user_name: str, mechanism: Mechanism, credential: ScramCredential, intent: int | None = None
    ) -> None:
        """Write ``credential`` (derived by kts: ``salted_password`` is set, for a cluster that takes it)."""
        ...

    def delete_credential(self, user_name: str, mechanism: Mechanism, intent: int | None = None) -> None: ...


class AclStore(Protocol):
    def change(
        self,
        pattern: ResourcePattern,
        edit: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
        intent: int | None = None,
    ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]: ...


class AclView(Protocol):
    """The replica's in-memory ACLs."""

    def snapshot(self) -> AclSnapshot: ...

    def refresh(self, pattern: ResourcePattern) -> None: ...


class CredentialSource(Protocol):
    """Where HTTP Basic passwords are checked (app/auth/basic.py): against stored SCRAM keys kts can read
    (ZooKeeper), or by a SCRAM exchange with a broker (the Kafka protocol never answers keys)."""

    def fingerprint(self, user_name: str) -> bytes:
        """What identifies the user's credentials as this replica knows them now: a remembered successful
        check counts only while it is unchanged."""
        ...

    def verify(self, user_name: str, password: str) -> Verdict:
        """ACCEPTED, or why not: REFUSED when the user exists, NO_SUCH_USER (for the audit alone) when not."""
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


class LockListing(Protocol):
    """The shared locks in force, read from the store itself rather than a replica's view (``kts lockout list``
    runs in a process of its own)."""

    def in_force_locks(self) -> list[LockInForce]:
        """Raises StoreUnavailable when the store cannot be read."""
        ...


class Leadership(Protocol):
    """Leadership among the replicas as a context that can be lost, not a flag: ``start()`` contends in the
    background, and while this replica leads, the duty it was built with runs with an event that is set the moment
    the lead may be lost (the duty must return promptly then; the replica contends again). One per backend: a
    ZooKeeper election, a database lease."""

    @property
    def is_leader(self) -> bool:
        """Whether this replica leads now (a reading: the lead can be lost the next moment)."""
        ...

    def start(self) -> None:
        """Contend in a thread of its own."""
        ...

    def stop(self) -> None:
        """Stop contending: a lead held is handed back, once its duty has been told to return."""
        ...
