"""HTTP Basic against Kafka-format SCRAM credentials, with a short-lived cache of verified passwords.

PBKDF2 with thousands of iterations costs milliseconds by design; running it on every request would cap
the service at a few hundred requests per second. A successful check is remembered for a short time,
keyed by the user, the exact stored credential, and a keyed hash of the password (the key is random per
process, so the cache holds nothing an attacker could use offline). A changed or deleted credential no
longer matches its cache entries, so it takes effect on the next request.

A refused login costs the same PBKDF2 work whoever it names, so its duration does not tell whether the user
exists: a login that the cache does not answer and that fails has derived one key per mechanism, against the
user's credential for it or, when the user has none that can be used, against a fixed dummy credential with
the iteration count kts writes by default. A login that succeeds stops at the matching credential. (A user
whose credential was written with more iterations still costs more, as on a broker.)
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from enum import Enum

from cachetools import TTLCache

from app.domain.clock import Clock
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism, ScramCredential
from app.domain.scram import derive, password_matches
from app.service.ports import UserStore

# Strongest first: a user with both credentials is checked against SCRAM-SHA-512.
_MECHANISMS = (Mechanism.SCRAM_SHA_512, Mechanism.SCRAM_SHA_256)
DUMMY_ITERATIONS = MIN_ITERATIONS  # what PUT /v1/users/{name}/credentials writes unless told otherwise


class Verdict(Enum):
    ACCEPTED = "accepted"
    REFUSED = "refused"  # the user exists: a wrong password (or none of its credentials can be used)
    NO_SUCH_USER = "no such user"  # for the audit alone: the answer and its cost are those of REFUSED


class BasicAuthenticator:
    def __init__(self, store: UserStore, clock: Clock, *, cache_ttl_ms: int = 60_000, cache_size: int = 10_000) -> None:
        self._store = store
        self._cache_key = os.urandom(32)
        # Least recently used entries go first when full; the injected clock keeps expiry testable.
        self._verified: TTLCache[bytes, bool] = TTLCache(maxsize=cache_size, ttl=cache_ttl_ms, timer=clock.now_ms)
        self._lock = threading.Lock()  # cachetools caches are not thread-safe
        # Derived from a random password no caller can send back, and never accepted anyway.
        unguessable = os.urandom(32).hex()
        self._dummies = {mechanism: derive(mechanism, unguessable, DUMMY_ITERATIONS) for mechanism in _MECHANISMS}

    def authenticate(self, user_name: str, password: str) -> bool:
        return self.check(user_name, password) is Verdict.ACCEPTED

    def check(self, user_name: str, password: str) -> Verdict:
        stored = self._store.credentials(user_name)
        usable = {mechanism: credential for mechanism, credential in stored.items() if _usable(credential)}
        entries = {
            mechanism: self._entry(user_name, mechanism, credential.stored_key, password)
            for mechanism, credential in usable.items()
        }
        if any(self._remembered(entry) for entry in entries.values()):
            return Verdict.ACCEPTED
        for mechanism in _MECHANISMS:
            credential = usable.get(mechanism)
            if credential is not None and password_matches(mechanism, credential, password):
                self._remember(entries[mechanism])
                return Verdict.ACCEPTED
        for mechanism in _MECHANISMS:
            if mechanism not in usable:  # a refusal costs one derivation per mechanism, whoever it names
                password_matches(mechanism, self._dummies[mechanism], password)
        return Verdict.REFUSED if stored else Verdict.NO_SUCH_USER

    def _entry(self, user_name: str, mechanism: Mechanism, stored_key: bytes, password: str) -> bytes:
        message = b"\x00".join(
            (user_name.encode("utf-8"), mechanism.value.encode(), stored_key, password.encode("utf-8"))
        )
        return hmac.new(self._cache_key, message, hashlib.sha256).digest()

    def _remembered(self, entry: bytes) -> bool:
        with self._lock:
            return entry in self._verified  # expired entries are not

    def _remember(self, entry: bytes) -> None:
        with self._lock:
            self._verified[entry] = True


def _usable(credential: ScramCredential) -> bool:
    # password_matches refuses other counts without deriving anything: they would cost nothing, or minutes.
    return MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS
