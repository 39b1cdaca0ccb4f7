"""SCRAM credentials computed exactly as Kafka's ``ScramFormatter`` does (RFC 5802 salted keys).

Used to write a user's credential and to check an HTTP Basic password against it. A broker derives a
delegation token's credential the same way (password = the token's base64 HMAC, 4096 iterations).

Written on hashlib rather than scramp's ``make_auth_info`` because scramp applies SASLprep to the
password and Kafka does not (it hashes the plain UTF-8 bytes); the two differ for some non-ASCII passwords.
"""

from __future__ import annotations

import hashlib
import hmac
import os

from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism, ScramCredential

SALT_BYTES = 32


def _keys(mechanism: Mechanism, password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes, bytes]:
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", mechanism.hash_name).digest()
    stored_key = hashlib.new(mechanism.hash_name, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", mechanism.hash_name).digest()
    return stored_key, server_key, salted


def derive(mechanism: Mechanism, password: str, iterations: int, salt: bytes | None = None) -> ScramCredential:
    """A credential for ``password``, with a fresh random salt unless one is given."""
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    stored_key, server_key, salted = _keys(mechanism, password, salt, iterations)
    return ScramCredential(salt, stored_key, server_key, iterations, salted_password=salted)


def password_matches(mechanism: Mechanism, credential: ScramCredential, password: str) -> bool:
    """Recompute the stored key from the password and compare in constant time."""
    if not MIN_ITERATIONS <= credential.iterations <= MAX_ITERATIONS:
        return False  # a tampered iteration count must not turn one request into minutes of PBKDF2
    stored_key, _, _ = _keys(mechanism, password, credential.salt, credential.iterations)
    return hmac.compare_digest(stored_key, credential.stored_key)
