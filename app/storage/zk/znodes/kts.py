"""kts's own znodes, under ``/kts``: no broker or Kafka tool reads them."""

from __future__ import annotations

from typing import Final

from app.domain.token_quota import QuotaKey
from app.storage.zk.sanitizer import sanitize


class KtsZNodes:
    """- ``/kts/audit-intents/<event id>``: an empty marker saying a change's audit event was written as
      pending. It is created in the same transaction as the change, so its presence proves the change
      happened (app/service/audit.py).
    - ``/kts/sweeper-election``: the election of the replica that sweeps expired tokens (kazoo's Election
      recipe creates and names the contenders' znodes below it).
    - ``/kts/token-quotas/owner/<principal>`` and ``/kts/token-quotas/requester/<principal>`` (the principal
      sanitized as Kafka sanitizes user names): empty guards whose znode version counts the creates charged
      to that quota. Each create sets its guards' data, guarded by the versions the replica counted at, in
      the transaction that creates the token, so two replicas cannot both take the last unit of a quota
      (app/service/token_quotas.py). One small znode per principal that ever created a token."""

    ROOT: Final = "/kts"
    AUDIT_INTENTS: Final = f"{ROOT}/audit-intents"
    SWEEPER_ELECTION: Final = f"{ROOT}/sweeper-election"
    TOKEN_QUOTAS: Final = f"{ROOT}/token-quotas"
    OWNER_QUOTAS: Final = f"{TOKEN_QUOTAS}/owner"
    REQUESTER_QUOTAS: Final = f"{TOKEN_QUOTAS}/requester"

    @staticmethod
    def quota_guard(key: QuotaKey) -> str:
        return f"{KtsZNodes.TOKEN_QUOTAS}/{key.kind.value}/{sanitize(str(key.principal))}"

    @staticmethod
    def audit_intent(event_id: int) -> str:
        return f"{KtsZNodes.AUDIT_INTENTS}/{event_id}"

    @staticmethod
    def audit_intent_event_id(name: str) -> int | None:
        """The event id an intent marker's znode name holds (None: not a marker)."""
        return int(name) if name.isdigit() else None
