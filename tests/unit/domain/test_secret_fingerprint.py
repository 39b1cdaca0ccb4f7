"""The keyed fingerprint of the cluster's secret key (app/domain/secret_fingerprint.py)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from app.domain.secret_fingerprint import LABEL, SecretFingerprint, SecretKeyMismatch, check_same_secret
from app.domain.token_secret import TokenSecret

SECRET = "the-brokers-secret"
SALT = bytes(range(32))


def test_fingerprint_is_hmac_sha256_keyed_by_the_secret_over_label_and_salt() -> None:
    fingerprint = SecretFingerprint.of(TokenSecret(SECRET), SALT)
    assert fingerprint.salt == SALT
    assert fingerprint.digest == hmac.digest(SECRET.encode(), LABEL + SALT, "sha256")
    # Neither the secret nor a plain hash of it.
    assert SECRET.encode() not in fingerprint.digest
    assert fingerprint.digest != hashlib.sha256(SECRET.encode()).digest()
    assert SECRET not in repr(fingerprint)


def test_same_secret_matches_another_does_not() -> None:
    fingerprint = SecretFingerprint.of(TokenSecret(SECRET), SALT)
    assert fingerprint.matches(TokenSecret(SECRET))
    assert not fingerprint.matches(TokenSecret(SECRET + "x"))


def test_salt_changes_the_fingerprint() -> None:
    assert SecretFingerprint.of(TokenSecret(SECRET), SALT) != SecretFingerprint.of(TokenSecret(SECRET), SALT[::-1])


class Cluster:
    """A fake of the znode: create if absent, return what is stored."""

    def __init__(self) -> None:
        self.stored: SecretFingerprint | None = None

    def record(self, fingerprint: SecretFingerprint) -> SecretFingerprint:
        if self.stored is None:
            self.stored = fingerprint
        return self.stored


def test_first_start_records_later_starts_check() -> None:
    cluster = Cluster()
    assert check_same_secret(cluster.record, TokenSecret(SECRET), lambda: SALT, "/kts/f") is True
    assert check_same_secret(cluster.record, TokenSecret(SECRET), lambda: SALT[::-1], "/kts/f") is False
    with pytest.raises(SecretKeyMismatch) as excinfo:
        check_same_secret(cluster.record, TokenSecret("another-secret"), lambda: SALT, "/kts/f")
    message = str(excinfo.value)
    assert message.startswith("delegation.token.secret.key differs") and "/kts/f" in message
    assert "\n" not in message and "another-secret" not in message and SECRET not in message
