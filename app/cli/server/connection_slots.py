"""The connections one listener holds, counted from the moment each is accepted (a TLS handshake in progress
included), so that neither one client address nor the whole listener can hold more file descriptors than its
caps: a connection over a cap is closed on arrival, before any handshake (``app/cli/server/uvicorn_h11.py``)."""

from __future__ import annotations

from collections import Counter


class ListenerSlots:
    """At most ``per_address`` connections from one client address (an IPv6 address as its /64, see
    ``app/domain/throttle.address_group``) and ``total`` in all; one instance per listener."""

    def __init__(self, *, per_address: int, total: int | None) -> None:
        self.per_address = per_address
        self.total = total
        self.held = 0
        self.by_address: Counter[str] = Counter()

    def take(self, address: str) -> str | None:
        """Count one more connection from ``address``; or, leaving the count alone, why it is refused."""
        if self.by_address[address] >= self.per_address:
            return f"{self.per_address} are open from {address or 'this address'}"
        if self.total is not None and self.held >= self.total:
            return f"the listener holds {self.total} connections"
        self.by_address[address] += 1
        self.held += 1
        return None

    def give_back(self, address: str) -> None:
        self.held -= 1
        self.by_address[address] -= 1
        if self.by_address[address] <= 0:
            del self.by_address[address]
