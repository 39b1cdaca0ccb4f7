"""Bulk revocation's decisions with in-memory fakes: batches, a renew or an expire landing between the read and
the delete, and the audit events around each (app/service/revocation.py)."""

from __future__ import annotations

import pytest

from app.domain.audit import Action, Outcome
from app.domain.authorization import Caller, SuperUsersOnly
from app.domain.errors import ClusterAuthorizationFailed, TokenRequestNotAllowed
from app.domain.principal import KafkaPrincipal
from app.domain.revocation import RevokeSelector
from app.domain.token import TokenInformation
from app.service import admission as admission_module
from app.service.audit import Auditor
from app.service.ports import StoredToken
from app.service.revocation import TokenRevocation
from tests.unit.fakes import NOW, FakeAuditLog, FakeIntentStore, FakeTokenStore, FakeTokenView

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
    monkeypatch.setattr(admission_module, "OPEN_BATCH", 2)
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
