"""One password check per account at a time on this replica; the attempts that arrive meanwhile wait for its
verdict, and reuse it when they present the very same credentials.

Without this, every attempt admitted before the first failure was counted got its password checked: 200 guesses
arriving together were 200 checks, whatever the lockout's threshold. Serialised, each check is counted before
the next starts, so a replica checks at most its share of the threshold (app/domain/lockout.py). A legitimate
client's parallel logins with one password all pass: the first is checked, the others reuse its verdict; once the
password is known, the verified-password cache answers them before they reach the gate (app/service/attempts.py).

Credentials are compared by a keyed hash (HMAC-SHA256 with a key random to this process), in constant time; the
hash lives only as long as the check. A wait is bounded (``wait_s``): a request never holds its thread longer,
it is told to retry.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from dataclasses import dataclass, field

from app.domain.errors import NotAuthenticated


@dataclass(eq=False, slots=True)
class Flight:
    """A check under way: whose credentials (their keyed hash) and, once done, its verdict."""

    digest: bytes
    done: threading.Event = field(default_factory=threading.Event)
    accepted: bool | None = None  # None: no verdict (the check failed for another reason)
    refusal: NotAuthenticated | None = None

    def same_credentials(self, digest: bytes) -> bool:
        return hmac.compare_digest(self.digest, digest)


class CheckGate:
    def __init__(self) -> None:
        self._key = os.urandom(32)
        self._flights: dict[str, Flight] = {}
        self._lock = threading.Lock()

    def digest(self, key: str, password: str) -> bytes:
        message = key.encode() + b"\x00" + password.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def enter(self, key: str, digest: bytes) -> tuple[Flight, bool]:
        """The account's check under way and False (wait for it), or a new one and True (run it, then
        ``leave``)."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight, False
            flight = self._flights[key] = Flight(digest)
            return flight, True

    def leave(self, key: str, flight: Flight) -> None:
        """The check is over (its verdict set): wake those waiting for it."""
        with self._lock:
            if self._flights.get(key) is flight:
                del self._flights[key]
        flight.done.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._flights)
