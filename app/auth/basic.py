"""HTTP Basic logins: a credential source checks the password, and a short-lived cache remembers successes.

Two sources (``CredentialSource``, app/service/ports.py): ``StoredKeyCredentials`` below checks against
Kafka-format SCRAM keys kts reads (ZooKeeper's ``/config/users``); with the Kafka protocol, which never answers
keys, a broker checks it in a SCRAM exchange (app/storage/kafka/scram_login.py). Either way the throttle and the
lockout (app/service/attempts.py) apply before the source is asked.

PBKDF2 with thousands of iterations costs milliseconds by design, and a broker's SCRAM exchange a round trip;
running either on every request would cap the service at a few hundred requests per second. A successful check
is remembered for a short time: a keyed hash of the user and the password, with a keyed hash of the source's
fingerprint of the user's credentials when it was accepted (the key is random per process, so the cache holds
nothing an attacker could use offline). A credential changed or deleted where the source can see it no longer
matches its cache entries, so it takes effect on the next request. The login guard asks the cache alone first
(``recall``): a login it vouches for skips the lockout's one-check-at-a-time turn, as it checks no password
(app/service/attempts.py).

With stored keys, a refused login costs the same PBKDF2 work whoever it names, so its duration does not tell
whether the user exists: a login that the cache does not answer and that fails has derived one key per
mechanism, against the user's credential for it or, when the user has none that can be used, against a fixed
dummy credential with the iteration count kts writes by default. A login that succeeds stops at the matching
credential. (A user whose credential was written with more iterations still costs more, as on a broker.)
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from typing import Protocol

from cachetools import TTLCache

from app.domain.clock import Clock
from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism, ScramCredential, Verdict
from app.domain.scram import derive, password_matches
from app.service.ports import CredentialSource

__all__ = ["DUMMY_ITERATIONS", "BasicAuthenticator", "StoredKeyCredentials", "Verdict"]


class StoredCredentials(Protocol):
    """A user store that answers SCRAM keys (ZooKeeper's)."""

    def credentials(self, user_name: str) -> dict[Mechanism, ScramCredential]: ...


# Strongest first: a user with both credentials is checked against SCRAM-SHA-512.
_MECHANISMS = (Mechanism.SCRAM_SHA_512, Mechanism.SCRAM_SHA_256)
DUMMY_ITERATIONS = MIN_ITERATIONS  # what PUT /v1/users/{name}/credentials writes unless told otherwise


class StoredKeyCredentials:
    """Passwords checked against the SCRAM keys a store answers (ZooKeeper)."""

    def __init__(self, store: StoredCredentials) -> None:
        self._store = store
        # Derived from a random password no caller can send back, and never accepted anyway.
        unguessable = os.urandom(32).hex()
        self._dummies = {mechanism: derive(mechanism, unguessable, DUMMY_ITERATIONS) for mechanism in _MECHANISMS}

    def fingerprint(self, user_name: str) -> bytes:
        _, usable = self._read(user_name)
        return b"\x00".join(
            mechanism.value.encode() + credential.stored_key for mechanism, credential in usable.items()
        )

    def verify(self, user_name: str, password: str) -> Verdict:
        stored, usable = self._read(user_name)
        for mechanism in _MECHANISMS:
            credential = usable.get(mechanism)
            if credential is not None and password_matches(mechanism, credential, password):
                return Verdict.ACCEPTED
        for mechanism in _MECHANISMS:
            if mechanism not in usable:  # a refusal costs one derivation per mechanism, whoever it names
                password_matches(mechanism, self._dummies[mechanism], password)
        return Verdict.REFUSED if stored else Verdict.NO_SUCH_USER

    def _read(self, user_name: str) -> tuple[dict[Mechanism, ScramCredential], dict[Mechanism, ScramCredential]]:
        """The user's stored credentials, and those of them a password can be checked against."""
        stored = self._store.credentials(user_name)
        usable = {
            mechanism: stored[mechanism]
            for mechanism in _MECHANISMS
            if mechanism in stored and _usable(stored[mechanism])
        }
        return stored, usable


class BasicAuthenticator:
    def __init__(
        self, source: CredentialSource, clock: Clock, *, cache_ttl_ms: int = 60_000, cache_size: int = 10_000
    ) -> None:
        self._source = source
        self._cache_key = os.urandom(32)
        # Least recently used entries go first when full; the injected clock keeps expiry testable. Each maps a
        # keyed hash of (user, password) to a keyed hash of the fingerprint the password was accepted under.
        self._verified: TTLCache[bytes, bytes] = TTLCache(maxsize=cache_size, ttl=cache_ttl_ms, timer=clock.now_ms)
        self._lock = threading.Lock()  # cachetools caches are not thread-safe

    def authenticate(self, user_name: str, password: str) -> bool:
        return self.check(user_name, password) is Verdict.ACCEPTED

    def check(self, user_name: str, password: str) -> Verdict:
        entry = self._entry(user_name, password)
        fingerprint = self._source.fingerprint(user_name)
        stamp = self._stamp(fingerprint)
        if fingerprint and self._matches(self._remembered(entry), stamp):
            return Verdict.ACCEPTED
        verdict = self._source.verify(user_name, password)
        if verdict is Verdict.ACCEPTED:
            # The fingerprint read before the check: a credential changed meanwhile leaves an entry nobody matches.
            self._remember(entry, stamp)
        return verdict

    def recall(self, user_name: str, password: str) -> bool:
        """Whether ``check`` would accept these credentials from the cache alone, the user's credentials as the
        source knows them now. Never checks a password (no derivation, no broker exchange) and remembers nothing:
        False is no verdict, only "not known to be right", and the login guard then runs the counted check.
        A password never accepted (a guess) is answered before the source is asked for the fingerprint: no store
        read, so a guess at a name no user has costs what it did without ``recall``."""
        remembered = self._remembered(self._entry(user_name, password))
        if remembered is None:
            return False
        fingerprint = self._source.fingerprint(user_name)
        return bool(fingerprint) and self._matches(remembered, self._stamp(fingerprint))

    def _entry(self, user_name: str, password: str) -> bytes:
        # The name length-prefixed: no other (name, password) gives the same message, whatever NUL bytes either
        # holds. A lookup of the keyed hash tells an attacker nothing of the password (the key is random to the
        # process).
        name = user_name.encode("utf-8")
        message = b"".join((len(name).to_bytes(4, "big"), name, password.encode("utf-8")))
        return hmac.new(self._cache_key, message, hashlib.sha256).digest()

    def _stamp(self, fingerprint: bytes) -> bytes:
        return hmac.new(self._cache_key, b"fingerprint\x00" + fingerprint, hashlib.sha256).digest()

    @staticmethod
    def _matches(remembered: bytes | None, stamp: bytes) -> bool:
        return remembered is not None and hmac.compare_digest(remembered, stamp)

    def _remembered(self, entry: bytes) -> bytes | None:
        with self._lock:
            return self._verified.get(entry)  # expired entries are not

    def _remember(self, entry: bytes, stamp: bytes) -> None:
        with self._lock:
            self._verified[entry] = stamp


def _usable(credential: ScramCredential) -> bool:
    # password_matches refuses other counts without deriving anything: they would cost nothing, or minutes.
    return MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS
