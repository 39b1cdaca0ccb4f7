"""The in-memory stores mark a change's audit intent (the pending event's id) with the change, as ZooKeeper
creates its marker in the change's transaction: a mark exists if and only if the change was made, so the audit
reconciler settles a pending event as it would on ZooKeeper."""

from __future__ import annotations

import pytest

from app.domain.acl import AccessControlEntry, ResourcePattern
from app.domain.credentials import Mechanism
from app.domain.errors import TokenExpired
from app.domain.principal import KafkaPrincipal
from app.domain.scram import derive
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.ports import CreateTerms, Expiry, StoredToken, TokenChange
from app.storage.memory.acls import MemoryAclStore
from app.storage.memory.intents import MemoryIntentStore
from app.storage.memory.tokens import MemoryTokenStore
from app.storage.memory.users import MemoryUserStore

ALICE = KafkaPrincipal.user("alice")


def test_a_write_marks_its_intent_and_a_refused_one_does_not() -> None:
    intents = MemoryIntentStore()
    tokens = MemoryTokenStore(TokenSecret("secret"), intents)
    token = TokenInformation(tokens.next_token_id(), ALICE, ALICE, (), 1000, 2000, 9000)
    tokens.create(token, CreateTerms(1))

    def refuse(stored: StoredToken) -> TokenChange[None]:
        raise TokenExpired("no")

    with pytest.raises(TokenExpired):
        tokens.change(token.token_id, refuse, 2)
    tokens.change(token.token_id, lambda stored: TokenChange(None, None, request=Expiry(-1)), 3)
    MemoryUserStore(intents).put_credential(
        "ann", Mechanism.SCRAM_SHA_256, derive(Mechanism.SCRAM_SHA_256, "pw", 4096), 4
    )
    acls = MemoryAclStore(intents)
    grant = AccessControlEntry("User:ann", "*", "CreateTokens", "Allow")
    acls.change(ResourcePattern("User", "User:ann"), lambda entries: entries | {grant}, 5)
    acls.change(ResourcePattern("User", "User:ann"), lambda entries: entries, 6)  # no change: no marker
    tokens.create(TokenInformation(tokens.next_token_id(), ALICE, ALICE, (), 1000, 2000, 9000))  # not audited

    assert intents.list() == [1, 3, 4, 5]
