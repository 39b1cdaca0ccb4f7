"""Bulk revocation's decisions with in-memory fakes: batches, a renew or an expire landing between the read and
the delete, and the audit events around each (app/service/revocation.py)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from kazoo.exceptions import NoNodeError
from kazoo.protocol.serialization import Transaction as KazooTransaction

from app.domain.audit import Action, Outcome
from app.domain.authorization import Caller, SuperUsersOnly
from app.domain.errors import ClusterAuthorizationFailed, TokenRequestNotAllowed
from app.domain.principal import KafkaPrincipal
from app.domain.revocation import RevokeSelector
from app.domain.token import TokenInformation
from app.domain.token_share import MAX_REQUESTERS_PER_BATCH, ShareLedger
from app.service import revocation as revocation_module
from app.service.audit import Auditor
from app.service.ports import LedgerState, StoredToken
from app.service.revocation import TokenRevocation
from app.storage.zk.client_security import DigestLogin, ZkClientSecurity
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from tests.unit.fakes import NOW, FakeAuditLog, FakeIntentStore, FakeTokenStore, FakeTokenView

JUTE_MAXBUFFER = 0xFFFFF  # ZooKeeper's default limit on one request, in bytes
ADMIN = Caller(KafkaPrincipal.user("admin"))
ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")


def _stored(token_id: str, owner: KafkaPrincipal = ALICE) -> StoredToken:
    return StoredToken(TokenInformation(token_id, owner, owner, (), NOW, NOW + 1000, NOW + 5000), 0)


class Harness:
    def __init__(self, *tokens: StoredToken) -> None:
        self.store = FakeTokenStore(tokens)
        self.view = FakeTokenView(tokens, store=self.store)
        self.log = FakeAuditLog()
        self.revocation = TokenRevocation(
            self.store,
            self.view,
            authorizer=SuperUsersOnly([ADMIN.principal]),
            auditor=Auditor(self.log, FakeIntentStore()),
        )

    def completed(self, action: Action) -> list[tuple[str | None, Outcome]]:
        return [(event.token_id, event.outcome) for event in self.log.completed.values() if event.action is action]

    def recorded(self, action: Action) -> list[Outcome]:
        return [event.outcome for event in self.log.events() if event.action is action]


def test_tokens_go_in_batches_with_one_event_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(revocation_module, "BATCH", 2)
    harness = Harness(*(_stored(f"t{n}") for n in range(5)), _stored("bobs", owner=BOB))

    revoked = harness.revocation.revoke(ADMIN, RevokeSelector(owner=ALICE))

    assert revoked == [f"t{n}" for n in range(5)]
    assert list(harness.store.tokens) == ["bobs"]
    assert sorted(harness.view.discarded) == revoked
    assert sorted(harness.completed(Action.TOKEN_EXPIRE)) == [(f"t{n}", Outcome.SUCCEEDED) for n in range(5)]
    assert all(event.details["deleted"] is True for event in harness.log.completed.values())


def test_a_token_renewed_between_read_and_delete_is_revoked_all_the_same() -> None:
    harness = Harness(_stored("renewed"), _stored("plain"))

    def renew_once(token_id: str) -> None:
        if token_id == "renewed":
            harness.store.after_get = None
            harness.store.renew(token_id, NOW + 4000)

    harness.store.after_get = renew_once

    assert harness.revocation.revoke(ADMIN, RevokeSelector(owner=ALICE)) == ["plain", "renewed"]
    assert harness.store.tokens == {}
    outcomes = harness.completed(Action.TOKEN_EXPIRE)
    # the batch attempt is on record as failed; then each token went on its own
    assert sorted(outcomes) == sorted(
        [(token_id, outcome) for token_id in ("plain", "renewed") for outcome in (Outcome.FAILED, Outcome.SUCCEEDED)]
    )


def test_a_token_expired_between_read_and_delete_is_skipped() -> None:
    harness = Harness(_stored("gone"), _stored("plain"))

    def expire_once(token_id: str) -> None:
        if token_id == "gone":
            harness.store.after_get = None
            del harness.store.tokens["gone"]

    harness.store.after_get = expire_once

    assert harness.revocation.revoke(ADMIN, RevokeSelector(owner=ALICE)) == ["plain"]
    assert harness.store.tokens == {}
    assert harness.recorded(Action.TOKEN_REVOKE) == [Outcome.SUCCEEDED]
    assert next(e for e in harness.log.events() if e.action is Action.TOKEN_REVOKE).details["revoked"] == 1


def test_refusals_are_recorded_and_change_nothing() -> None:
    harness = Harness(_stored("kept"))
    with pytest.raises(ClusterAuthorizationFailed):
        harness.revocation.revoke(Caller(BOB), RevokeSelector(owner=ALICE))
    with pytest.raises(TokenRequestNotAllowed):
        harness.revocation.revoke(Caller(ADMIN.principal, token_id="x"), RevokeSelector(owner=ALICE))
    assert list(harness.store.tokens) == ["kept"]
    assert harness.recorded(Action.TOKEN_REVOKE) == [Outcome.DENIED, Outcome.DENIED]


class _MeasuredConnection(ZkConnection):
    """A ZooKeeper connection that never connects: it measures the multi-op request a commit would send (and
    finds no share ledger)."""

    sizes: ClassVar[list[int]] = []

    def commit(self, transaction: Any) -> Exception | None:
        self.sizes.append(len(KazooTransaction(transaction.operations).serialize()))
        return None

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
    batch = [(f"{n:064d}", 2**31 - 1, f"/kts/audit-intents/{2**63 - 1 - n}") for n in range(revocation_module.BATCH)]
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
    batch = [(f"{n:064d}", 2**31 - 1, f"/kts/audit-intents/{2**63 - 1 - n}") for n in range(revocation_module.BATCH)]
    ZkTokenStore(zk).delete_many(batch, [_FullLedger(n) for n in range(MAX_REQUESTERS_PER_BATCH)])
    (size,) = _MeasuredConnection.sizes
    print(f"worst-case deletion batch with {MAX_REQUESTERS_PER_BATCH} ledger charges: {size} bytes")
    assert size < JUTE_MAXBUFFER * 2 // 3, size
