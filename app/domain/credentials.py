"""SCRAM credentials as Kafka stores them: RFC 5802 salted keys per mechanism, never the password."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, StrEnum


class Verdict(Enum):
    """How a password check ended."""

    ACCEPTED = "accepted"
    REFUSED = "refused"  # the user exists: a wrong password (or none of its credentials can be used)
    NO_SUCH_USER = "no such user"  # for the audit alone: the answer and its cost are those of REFUSED


class Mechanism(StrEnum):
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"

    @property
    def hash_name(self) -> str:
        return "sha256" if self is Mechanism.SCRAM_SHA_256 else "sha512"


# Kafka's ScramMechanism bounds: kafka-configs.sh refuses fewer than 4096 or more than 16384 iterations.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int
    # The PBKDF2 output the keys are derived from: what Kafka's AlterUserScramCredentials takes (KIP-554).
    # Known only for a credential kts derived from a password; never stored by kts.
    salted_password: bytes = field(default=b"", compare=False)

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations}, ***)"
