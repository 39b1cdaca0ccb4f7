"""kts's own znodes, under ``/kts``: no broker or Kafka tool reads them."""

from __future__ import annotations

from typing import Final


class KtsZNodes:
    """- ``/kts/audit-intents/<event id>``: an empty marker saying a change's audit event was written as
      pending. It is created in the same transaction as the change, so its presence proves the change
      happened (app/service/audit.py).
    - ``/kts/sweeper-election``: the election of the replica that sweeps expired tokens (kazoo's Election
      recipe creates and names the contenders' znodes below it)."""

    ROOT: Final = "/kts"
    AUDIT_INTENTS: Final = f"{ROOT}/audit-intents"
    SWEEPER_ELECTION: Final = f"{ROOT}/sweeper-election"

    @staticmethod
    def audit_intent(event_id: int) -> str:
        return f"{KtsZNodes.AUDIT_INTENTS}/{event_id}"

    @staticmethod
    def audit_intent_event_id(name: str) -> int | None:
        """The event id an intent marker's znode name holds (None: not a marker)."""
        return int(name) if name.isdigit() else None
