"""Whether this replica's ``delegation.token.secret.key`` is the one the cluster's tokens were minted with.

Every replica and broker must derive token HMACs from the same secret; a replica started with another one would
hand out tokens no broker accepts. The cluster keeps a keyed fingerprint of the first secret seen:
HMAC-SHA256(key = the secret, message = a fixed label + a random salt), stored with its salt. It tells whether a
candidate secret is the same without holding the secret or a plain hash of it. (Knowing the fingerprint helps
guess the secret no more than one token's id and HMAC does, which every token holder has.)
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass, field

from app.domain.token_secret import TokenSecret

LABEL = b"kts delegation.token.secret.key fingerprint v1\x00"
SALT_BYTES = 32


class SecretKeyMismatch(Exception):
    """This replica's secret is not the cluster's. ``str()`` is one line and never holds the secret."""


@dataclass(frozen=True, slots=True)
class SecretFingerprint:
    salt: bytes
    digest: bytes = field(repr=False)

    @staticmethod
    def of(secret: TokenSecret, salt: bytes) -> SecretFingerprint:
        return SecretFingerprint(salt, secret.keyed_digest(LABEL + salt))

    def matches(self, secret: TokenSecret) -> bool:
        return hmac.compare_digest(secret.keyed_digest(LABEL + self.salt), self.digest)


def check_same_secret(
    record: Callable[[SecretFingerprint], SecretFingerprint],
    secret: TokenSecret,
    new_salt: Callable[[], bytes],
    where: str,
) -> bool:
    """Record this secret's fingerprint unless the cluster has one, then compare (``record`` creates it if
    absent and returns the one stored, whoever wrote it). True when this call recorded it."""
    mine = SecretFingerprint.of(secret, new_salt())
    stored = record(mine)
    if not stored.matches(secret):
        raise SecretKeyMismatch(
            "delegation.token.secret.key differs from the one this cluster's tokens were minted with "
            f"(its fingerprint is at {where} in ZooKeeper): start every replica with the brokers' secret"
        )
    return stored == mine
