"""``kts cluster prepare-migration``: before a ZooKeeper cluster migrates to KRaft, make kts's principal on the Kafka
protocol (``admin.sasl.jaas.config``) a renewer of every live token, so that kts on ``bootstrap.servers`` renews and
expires them after the switch (app/domain/migration_renewer.py says why).

Each token is changed through kts's normal write path: a compare-and-set of its znode with its change notification in
one transaction, behind the write fence that refuses every write once a KRaft controller has claimed the cluster,
audited as ``token.renewer.add`` (pending first, settled by the outcome) with the operating-system user who ran it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from app.domain import migration_renewer
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.clock import Clock
from app.domain.errors import TokenExpired, TokenNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.service.audit import Auditor
from app.service.ports import StoredToken, TokenView
from app.storage.zk.token_store import ZkTokenStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Preparation:
    principal: KafkaPrincipal
    added: int  # tokens it is a renewer of now
    already: int  # live tokens it could renew already (owner or renewer)
    gone: int  # tokens deleted or expired between the listing and their change


class MigrationPreparation:
    def __init__(self, store: ZkTokenStore, *, auditor: Auditor, clock: Clock) -> None:
        self._store = store
        self._auditor = auditor
        self._clock = clock

    def add_renewer(self, principal: KafkaPrincipal, *, operator: str) -> Preparation:
        """Every live token of the cluster, as ZooKeeper has it now, made renewable by ``principal``."""
        now = self._clock.now_ms()
        live = [stored.token for stored in self._store.list() if not stored.token.is_expired(now)]
        missing = migration_renewer.lacking(live, principal, now)
        added = gone = 0
        for token in missing:
            event = AuditEvent(
                Action.TOKEN_RENEWER_ADD,
                Outcome.PENDING,
                owner=str(token.owner),
                token_requester=str(token.token_requester),
                token_id=token.token_id,
                details={"renewer": str(principal), "operatingSystemUser": operator},
            )

            def edit(stored: StoredToken) -> TokenInformation:
                if stored.token.is_expired(self._clock.now_ms()):
                    raise TokenExpired(f"Token {stored.token.token_id} has expired.")  # left to the sweep
                return migration_renewer.with_renewer(stored.token, principal)

            try:
                self._change(token.token_id, event, edit)
            except (TokenNotFound, TokenExpired):
                gone += 1
                continue
            added += 1
        log.info("prepare-migration: %s added to the renewers of %d tokens", principal, added)
        return Preparation(principal, added, len(live) - len(missing), gone)

    def _change(self, token_id: str, event: AuditEvent, edit: Callable[[StoredToken], TokenInformation]) -> None:
        def perform(intent: int) -> None:
            self._store.rewrite(token_id, edit, intent)

        def succeeded(_: None) -> AuditEvent:
            return event.ended(Outcome.SUCCEEDED)

        self._auditor.mutation(event, perform, succeeded=succeeded)


def unrenewable(view: TokenView, principal: KafkaPrincipal, now_ms: int) -> int:
    """Live tokens ``principal`` could not renew or expire through the Kafka protocol."""
    return len(migration_renewer.lacking((stored.token for stored in view.tokens()), principal, now_ms))
