"""In-memory fakes of the ports (app/service/ports.py, app/service/audit.py) and of the clock, shared by
every unit test of a service, the authenticator and the sweeper. They keep the contracts that matter to
the callers (versions for compare-and-set, all-or-nothing batches, errors of the real adapters) and let
a test inject failures or act as a concurrent writer; nothing else.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from app.domain.acl import AccessControlEntry, AclSnapshot, ResourcePattern
from app.domain.audit import AuditEvent, EventQuery, Outcome, RequestContext, StoredEvent
from app.domain.credentials import Mechanism, ScramCredential
from app.domain.errors import (
    ConcurrentModification,
    CredentialNotFound,
    KtsError,
    StoreUnavailable,
    TokenNotFound,
)
from app.domain.lockout import Lock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, counts_against
from app.domain.token_secret import TokenSecret, new_token_id
from app.domain.token_share import ShareLedger
from app.service.admission import WriteCharge
from app.service.ports import PLAIN_CREATE, CreateTerms, StoredToken
from app.storage.zk.share_ledgers import NO_LEDGER, LedgerState, ShareCharge, share_charge

NOW = 1_700_000_000_000
AUDIT_DOWN = "The audit database is not reachable right now; retry shortly."
MAX_CAS_ATTEMPTS = 8


class FakeClock:
    def __init__(self, now_ms: int = NOW) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


# -------------------- tokens


class FakeTokenStore:
    """The authoritative token store: compare-and-set by version, all-or-nothing batch deletes, and hooks
    (``after_get``, ``after_delete``) to act as a concurrent writer at the worst moment."""

    def __init__(self, tokens: Iterable[StoredToken] = ()) -> None:
        self.tokens: dict[str, StoredToken] = {stored.token.token_id: stored for stored in tokens}
        self.created: list[tuple[str, int | None]] = []
        self.updated: list[tuple[str, int, int | None]] = []
        self.deleted: list[tuple[str, int, int | None]] = []
        self.after_get: Callable[[str], None] | None = None
        self.after_delete: Callable[[str], None] | None = None
        self.fail_with: KtsError | None = None  # raised by the next write
        self.guards: dict[QuotaKey, int] = {}
        self.ledgers = FakeShareLedgers()  # share ledgers, charged in the same "transaction" as a write

    def next_token_id(self) -> str:
        return new_token_id()

    def _failing(self) -> None:
        if self.fail_with is not None:
            error, self.fail_with = self.fail_with, None
            raise error

    def get(self, token_id: str) -> StoredToken | None:
        stored = self.tokens.get(token_id)
        if self.after_get is not None:
            self.after_get(token_id)
        return stored

    def get_many(
        self, token_ids: list[str], known: Mapping[str, StoredToken] | None = None
    ) -> dict[str, StoredToken | None]:
        return {token_id: self.get(token_id) for token_id in token_ids}

    def list(self) -> list[StoredToken]:
        return list(self.tokens.values())

    def create(self, token: TokenInformation, terms: CreateTerms = PLAIN_CREATE) -> StoredToken:
        """Quota guards as the ZooKeeper store keeps them: a version per key, moved on by each create."""
        intent, quotas, admit, charge = terms.intent, terms.quotas, terms.admit, terms.charge
        if admit is not None:
            admit({key: self.guards.get(key, -1) for key in quotas})
        ledger = None if charge is None else self.ledgers.decide(charge)
        self._failing()
        if ledger is not None:
            self.ledgers.put(*ledger)
        for key in quotas:
            self.guards[key] = self.guards.get(key, -1) + 1
        if token.token_id in self.tokens:
            raise ConcurrentModification(f"Token {token.token_id} already exists.")
        stored = self.tokens[token.token_id] = StoredToken(token, 0)
        self.created.append((token.token_id, intent))
        return stored

    def _current(self, token_id: str, expected_version: int) -> StoredToken:
        current = self.tokens.get(token_id)
        if current is None:
            raise TokenNotFound(f"Token {token_id} no longer exists.")
        if current.version != expected_version:
            raise ConcurrentModification("The token changed while this request was being handled.")
        return current

    def update(self, token: TokenInformation, expected_version: int, intent: int | None = None) -> StoredToken:
        self._failing()
        self._current(token.token_id, expected_version)
        stored = self.tokens[token.token_id] = StoredToken(token, expected_version + 1)
        self.updated.append((token.token_id, expected_version, intent))
        return stored

    def delete(self, token_id: str, expected_version: int, intent: int | None = None) -> None:
        self._failing()
        self._current(token_id, expected_version)
        del self.tokens[token_id]
        self.deleted.append((token_id, expected_version, intent))
        if self.after_delete is not None:
            self.after_delete(token_id)

    def change(
        self, token_id: str, decide: Callable[[StoredToken], Any], intent: int | None = None
    ) -> tuple[StoredToken | None, Any]:
        """Compare-and-set as the ZooKeeper store does it: read, let ``decide`` answer the new state (its
        ``token``, None to delete, and its ``result``), write guarded by the version read; on a lost race
        read and decide again."""
        for _ in range(MAX_CAS_ATTEMPTS):
            stored = self.get(token_id)
            if stored is None:
                raise TokenNotFound(f"Token {token_id} does not exist.")
            decision = decide(stored)
            charge = getattr(decision, "charge", None)
            ledger = None if charge is None else self.ledgers.decide(charge)
            try:
                if decision.token is None:
                    self.delete(token_id, stored.version, intent)
                    written = None
                else:
                    written = self.update(decision.token, stored.version, intent)
            except ConcurrentModification:
                continue
            if ledger is not None:
                self.ledgers.put(*ledger)
            return written, decision.result
        raise ConcurrentModification(f"Token {token_id} kept changing under concurrent requests; retry.")

    def delete_many(self, deletions: list[tuple[str, int, int | None]], charges: Sequence[WriteCharge] = ()) -> None:
        """All or nothing, like a ZooKeeper multi-op transaction, charges included."""
        for token_id, version, _ in deletions:
            self._current(token_id, version)
        ledgers = [self.ledgers.decide(charge) for charge in charges]
        for token_id, version, intent in deletions:
            self.delete(token_id, version, intent)
        if charges:
            self.ledgers.charges.append([share_charge(charge).principal for charge in charges])
        for principal, ledger in ledgers:
            self.ledgers.put(principal, ledger)

    def renew(self, token_id: str, expiry: int) -> None:
        """Another replica's renew: a new version of the token."""
        current = self.tokens[token_id]
        self.tokens[token_id] = StoredToken(current.token.with_expiry(expiry), current.version + 1)


class FakeShareLedgers:
    """Share ledgers by principal with their versions, charged with the token store's writes; ``charges``
    records the principals each batch of deletions charged."""

    def __init__(self) -> None:
        self.ledgers: dict[KafkaPrincipal, tuple[ShareLedger, int]] = {}
        self.charges: list[list[KafkaPrincipal]] = []

    def state(self, principal: KafkaPrincipal) -> LedgerState:
        ledger, version = self.ledgers.get(principal, (ShareLedger(), NO_LEDGER))
        return LedgerState(ledger, version)

    def decide(self, charge: WriteCharge) -> tuple[KafkaPrincipal, ShareLedger]:
        ledger_charge: ShareCharge = share_charge(charge)
        return ledger_charge.principal, ledger_charge.decide(self.state(ledger_charge.principal))

    def put(self, principal: KafkaPrincipal, ledger: ShareLedger) -> None:
        self.ledgers[principal] = (ledger, self.state(principal).version + 1)


class FakeTokenView:
    """The replica's token cache. Without a store it is frozen at what it was given (the sweeper plans on
    such a view); with one it re-reads from it when asked to refresh or catch up, as the real cache re-reads
    ZooKeeper. ``secret`` lets it find tokens by HMAC."""

    def __init__(
        self,
        tokens: Iterable[StoredToken] = (),
        *,
        store: FakeTokenStore | None = None,
        secret: TokenSecret | None = None,
    ) -> None:
        self._tokens = {stored.token.token_id: stored for stored in tokens}
        self._store = store
        self._secret = secret
        self.applied: list[str] = []
        self.discarded: list[str] = []
        self.refreshed: list[str] = []
        self.catch_ups = 0

    def get(self, token_id: str) -> StoredToken | None:
        return self._tokens.get(token_id)

    def lookup(self, token_id: str) -> StoredToken | None:
        return self.get(token_id)

    def find_by_hmac(self, mac: bytes) -> str | None:
        if self._secret is None:
            return None
        return next((token_id for token_id in self._tokens if self._secret.matches(token_id, mac)), None)

    def tokens(self) -> list[StoredToken]:
        return list(self._tokens.values())

    def related_to(self, principals: Iterable[KafkaPrincipal]) -> list[StoredToken]:
        wanted = set(principals)
        return [
            stored
            for stored in self._tokens.values()
            if stored.token.owner in wanted
            or stored.token.token_requester in wanted
            or wanted.intersection(stored.token.renewers)
        ]

    def related_tokens(self, principals: Iterable[KafkaPrincipal]) -> list[TokenInformation]:
        return [stored.token for stored in self.related_to(principals)]

    def after(self, token_id: str | None, count: int) -> list[StoredToken]:
        ordered = sorted(self._tokens)
        start = 0 if token_id is None else bisect_right(ordered, token_id)
        return [self._tokens[found] for found in ordered[start : start + count]]

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        return sum(counts_against(key, stored.token, now_ms) for stored in self._tokens.values())

    def requested_count(self, principal: KafkaPrincipal) -> int:
        return sum(stored.token.token_requester == principal for stored in self._tokens.values())

    def expired_count(self, now_ms: int) -> int:
        return sum(stored.token.is_expired(now_ms) for stored in self._tokens.values())

    def refresh(self, token_id: str) -> None:
        self.refreshed.append(token_id)
        if self._store is not None:
            stored = self._store.tokens.get(token_id)
            if stored is None:
                self._tokens.pop(token_id, None)
            else:
                self._tokens[token_id] = stored

    def refresh_latest(self, token_id: str) -> None:
        self.refresh(token_id)

    def catch_up(self) -> None:
        self.catch_ups += 1
        if self._store is not None:
            self._tokens = dict(self._store.tokens)

    def apply(self, stored: StoredToken) -> None:
        self.applied.append(stored.token.token_id)
        self._tokens[stored.token.token_id] = stored

    def discard(self, token_id: str) -> None:
        self.discarded.append(token_id)
        self._tokens.pop(token_id, None)

    def discard_many(self, token_ids: list[str]) -> None:
        for token_id in token_ids:
            self.discard(token_id)


# -------------------- ACLs and users


class FakeAclStore:
    """ACL entries per resource pattern; ``change`` applies an edit and returns (before, after)."""

    def __init__(self) -> None:
        self.entries: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self.changes: list[tuple[ResourcePattern, int | None]] = []
        self.fail_with: KtsError | None = None

    def change(
        self,
        pattern: ResourcePattern,
        edit: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
        intent: int | None = None,
    ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]:
        if self.fail_with is not None:
            error, self.fail_with = self.fail_with, None
            raise error
        before = self.entries.get(pattern, frozenset())
        after = frozenset(edit(before))
        self.entries[pattern] = after
        self.changes.append((pattern, intent))
        return before, after


class FakeAclView:
    """The replica's ACL cache: a snapshot of the store taken at each refresh (and at the start)."""

    def __init__(self, store: FakeAclStore) -> None:
        self._store = store
        self._snapshot = AclSnapshot(store.entries)
        self.refreshed: list[ResourcePattern] = []

    def snapshot(self) -> AclSnapshot:
        return self._snapshot

    def refresh(self, pattern: ResourcePattern) -> None:
        self.refreshed.append(pattern)
        self._snapshot = self._snapshot.replace(pattern, self._store.entries.get(pattern, frozenset()))

    def reload(self) -> None:
        """Take in every stored ACL (what the watch on the ACL znodes would bring)."""
        self._snapshot = AclSnapshot(self._store.entries)


class FakeUserStore:
    def __init__(self) -> None:
        self.users: dict[str, dict[Mechanism, ScramCredential]] = {}
        self.intents: list[int | None] = []

    def credentials(self, user_name: str) -> dict[Mechanism, ScramCredential]:
        return dict(self.users.get(user_name, {}))

    def mechanisms(self, user_name: str) -> dict[Mechanism, int]:
        found = self.credentials(user_name)
        return {mechanism: found[mechanism].iterations for mechanism in Mechanism if mechanism in found}

    def put_credential(
        self, user_name: str, mechanism: Mechanism, credential: ScramCredential, intent: int | None = None
    ) -> None:
        self.users.setdefault(user_name, {})[mechanism] = credential
        self.intents.append(intent)

    def delete_credential(self, user_name: str, mechanism: Mechanism, intent: int | None = None) -> None:
        if mechanism not in self.users.get(user_name, {}):
            raise CredentialNotFound(f"User {user_name} has no {mechanism.value} credential.")
        del self.users[user_name][mechanism]
        self.intents.append(intent)


# -------------------- account locks


class FakeLockoutStore:
    """Shared locks in a dict, ended by the fake clock. ``full`` refuses new locks (the bound reached);
    ``fail_with`` fails every write as an unreachable store does."""

    def __init__(self, clock: FakeClock, replicas: int = 1) -> None:
        self.clock = clock
        self.replicas_seen = replicas
        self.locks: dict[str, list[Lock]] = {}
        self.ends: dict[str, int] = {}
        self.full = False
        self.fail_with: KtsError | None = None
        self.listeners: list[Callable[[str], None]] = []
        self.releases: list[str] = []

    def replicas(self) -> int:
        return self.replicas_seen

    def locked_ms(self, key: str) -> int:
        return max(0, self.ends.get(key, 0) - self.clock.now_ms())

    def share(self, lock: Lock) -> bool:
        if self.fail_with is not None:
            raise self.fail_with
        if self.full:
            return False
        self.locks.setdefault(lock.key, []).append(lock)
        self.ends[lock.key] = max(self.ends.get(lock.key, 0), self.clock.now_ms() + lock.duration_ms)
        return True

    def release(self, key: str, duration_ms: int) -> bool:
        if self.fail_with is not None:
            raise self.fail_with
        was = self.locked_ms(key) > 0
        self.locks.pop(key, None)
        self.ends.pop(key, None)
        self.releases.append(key)
        for listener in self.listeners:
            listener(key)
        return was

    def on_released(self, listener: Callable[[str], None]) -> None:
        self.listeners.append(listener)

    def remove_ended(self) -> int:
        ended = [key for key in self.ends if self.locked_ms(key) == 0]
        for key in ended:
            del self.ends[key]
            self.locks.pop(key, None)
        return len(ended)


# -------------------- audit


class FakeAuditLog:
    """Appended events by id, and how each was completed. ``down`` makes every call fail as an unreachable
    database does; ``append_failures`` fails only the next appends; ``complete_fails`` only completions."""

    def __init__(self) -> None:
        self.appended: dict[int, AuditEvent] = {}
        self.completed: dict[int, AuditEvent] = {}
        self.contexts: dict[int, RequestContext] = {}
        self.queries: list[EventQuery] = []
        self.stored: list[StoredEvent] = []  # what query answers
        self.down = False
        self.append_failures = 0
        self.complete_fails = False
        self.commits = 0  # of append_many and complete_many (one commit each)

    def _check(self) -> None:
        if self.down:
            raise StoreUnavailable(AUDIT_DOWN)

    def ping(self) -> None:
        self._check()

    def append(self, event: AuditEvent, context: RequestContext) -> int:
        self._check()
        if self.append_failures:
            self.append_failures -= 1
            raise StoreUnavailable(AUDIT_DOWN)
        event_id = len(self.appended) + 1
        self.appended[event_id] = event
        self.contexts[event_id] = context
        return event_id

    def append_many(
        self, batch: list[AuditEvent], context: RequestContext, *, succeeded: Sequence[int] = ()
    ) -> list[int]:
        self._check()
        if self.append_failures:
            self.append_failures -= 1
            raise StoreUnavailable(AUDIT_DOWN)
        if succeeded and self.complete_fails:  # the commit settles events: it fails, the appends with it
            raise StoreUnavailable(AUDIT_DOWN)
        self.commits += 1
        for event_id in succeeded:  # in the same commit, as the SQL log does
            if event_id not in self.completed:
                self.completed[event_id] = self.appended[event_id].ended(Outcome.SUCCEEDED)
        return [self.append(event, context) for event in batch]

    def complete(self, event_id: int, event: AuditEvent) -> bool:
        self._check()
        if self.complete_fails:
            raise StoreUnavailable(AUDIT_DOWN)
        assert event_id in self.appended and event_id not in self.completed
        self.completed[event_id] = event
        return True

    def complete_many(self, settled: list[tuple[int, AuditEvent]]) -> int:
        self.commits += 1
        return sum(self.complete(event_id, event) for event_id, event in settled)

    def pending(self, *, older_than_ms: int, service_id: str | None = None) -> list[StoredEvent]:
        return []

    def query(self, query: EventQuery) -> list[StoredEvent]:
        self._check()
        self.queries.append(query)
        return list(self.stored)

    def is_pending(self, event_id: int) -> bool | None:
        if event_id not in self.appended:
            return None
        return event_id not in self.completed and self.appended[event_id].outcome is Outcome.PENDING

    def delete_before(self, timestamp_ms: int, limit: int) -> int:
        return 0

    def events(self) -> list[AuditEvent]:
        """Each event as it ended (or as appended while it has not been completed), in order."""
        return [self.completed.get(event_id, event) for event_id, event in self.appended.items()]


class FakeIntentStore:
    """Intent markers: ``present`` holds the ids whose marker exists."""

    def __init__(self) -> None:
        self.present: set[int] = set()
        self.cleared: list[int] = []

    def existing(self, event_ids: list[int]) -> set[int]:
        return {event_id for event_id in event_ids if event_id in self.present}

    def clear(self, event_id: int) -> None:
        self.cleared.append(event_id)
        self.present.discard(event_id)

    def clear_many(self, event_ids: list[int]) -> None:
        for event_id in event_ids:
            self.clear(event_id)

    def clear_soon(self, event_ids: list[int]) -> None:
        self.clear_many(event_ids)

    def clear_batch(self, event_ids: list[int]) -> None:
        self.clear_many(event_ids)

    def clear_batch_soon(self, event_ids: list[int]) -> None:
        self.clear_many(event_ids)

    def marks(self) -> list[list[int]]:
        return [[event_id] for event_id in sorted(self.present)]

    def list(self) -> list[int]:
        return sorted(self.present)


class RecordingObserver:
    """An AuditObserver that keeps what it is told."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def observe(self, event: AuditEvent) -> None:
        self.events.append(event)

    def outcomes(self) -> list[tuple[str, str, int | None]]:
        return [(event.action.value, event.outcome.value, event.error_code) for event in self.events]


class FakeTrail:
    """The audit trail and the token requesters' ledger of app/storage/kafka/cluster_audit.py, sharing one state as
    the database's tables do: events by id, and the ledger's rows (token id -> event id, requester, whether
    reconstructed). A claim or a reconstruction writes the row and the event together, or neither."""

    def __init__(self) -> None:
        self.events: dict[int, StoredEvent] = {}
        self.ledger: dict[str, tuple[int | None, str, bool]] = {}
        self.forgotten_after: int | None = None

    def write(self, event: AuditEvent, *, at_ms: int, service_id: str = "kts-0") -> int:
        event_id = len(self.events) + 1
        self.events[event_id] = StoredEvent(
            event_id,
            at_ms,
            event.action.value,
            event.outcome.value,
            event.principal,
            event.owner,
            event.token_requester,
            event.token_id,
            event.error_code,
            service_id,
            None,
            None,
            dict(event.details),
        )
        return event_id

    # AuditLog
    def pending(self, *, older_than_ms: int, service_id: str | None = None) -> list[StoredEvent]:
        return [e for e in self.events.values() if e.outcome == Outcome.PENDING.value and e.timestamp < older_than_ms]

    def complete_many(self, settled: list[tuple[int, AuditEvent]]) -> int:
        return sum(self._complete(event_id, event) for event_id, event in settled)

    def is_pending(self, event_id: int) -> bool | None:
        stored = self.events.get(event_id)
        return None if stored is None else stored.outcome == Outcome.PENDING.value

    def _complete(self, event_id: int, event: AuditEvent) -> bool:
        stored = self.events[event_id]
        if stored.outcome != Outcome.PENDING.value:
            return False
        self.events[event_id] = replace(
            stored, outcome=event.outcome.value, token_id=event.token_id or stored.token_id, details=dict(event.details)
        )
        return True

    # TokenLedger
    def tokens_of_events(self, event_ids: Sequence[int]) -> dict[int, str]:
        wanted = set(event_ids)
        return {event_id: token_id for token_id, (event_id, _, _) in self.ledger.items() if event_id in wanted}

    def recorded(self, token_ids: Sequence[str]) -> set[str]:
        return set(token_ids) & self.ledger.keys()

    def created_events(self, token_ids: Sequence[str]) -> dict[str, Any]:
        from app.storage.sql.token_requesters import NamedCreate

        found: dict[str, NamedCreate] = {}
        for stored in sorted(self.events.values(), key=lambda e: -e.id):
            if stored.token_id in token_ids and stored.action == "token.create" and stored.outcome == "succeeded":
                found[stored.token_id] = NamedCreate(stored.id, stored.token_requester)
        return found

    def record(self, token_id: str, *, requester: str, event_id: int | None, reconstructed: bool = False) -> bool:
        if token_id in self.ledger:
            return False
        self.ledger[token_id] = (event_id, requester, reconstructed)
        return True

    def adopt(self, token: TokenInformation, named: Any) -> bool:
        return self.record(
            token.token_id, requester=named.requester or str(token.token_requester), event_id=named.event_id
        )

    def claim(self, event_id: int, token: TokenInformation, requester: str, settled: AuditEvent) -> bool:
        if token.token_id in self.ledger or self.events[event_id].outcome != Outcome.PENDING.value:
            return False
        self.record(token.token_id, requester=requester, event_id=event_id)
        return self._complete(event_id, settled)

    def forget_older_than(self, age_ms: int) -> int:
        self.forgotten_after = age_ms
        return 0

    def reconstruct(self, token: TokenInformation, event: AuditEvent) -> int | None:
        if token.token_id in self.ledger:
            return None
        event_id = self.write(event, at_ms=NOW)
        self.record(token.token_id, requester=str(token.token_requester), event_id=event_id, reconstructed=True)
        return event_id
