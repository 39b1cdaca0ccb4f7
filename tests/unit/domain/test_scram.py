"""SCRAM credentials as Kafka's ``ScramFormatter`` computes them (RFC 5802, plain UTF-8, no SASLprep)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
import scramp

from app.domain.credentials import MAX_ITERATIONS, MIN_ITERATIONS, Mechanism, ScramCredential
from app.domain.scram import SALT_BYTES, derive, password_matches

MECHANISMS = list(Mechanism)
SALT = b"0123456789abcdef0123456789abcdef"


def independent_keys(hash_name: str, password: bytes, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    """RFC 5802 section 3, written out again: (StoredKey, ServerKey)."""
    salted = hashlib.pbkdf2_hmac(hash_name, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    return hashlib.new(hash_name, client_key).digest(), server_key


def test_mechanism_names_and_hashes() -> None:
    assert Mechanism.SCRAM_SHA_256.value == "SCRAM-SHA-256"
    assert Mechanism.SCRAM_SHA_512.value == "SCRAM-SHA-512"
    assert Mechanism.SCRAM_SHA_256.hash_name == "sha256"
    assert Mechanism.SCRAM_SHA_512.hash_name == "sha512"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_derive_matches_an_independent_rfc5802_computation(mechanism: Mechanism) -> None:
    credential = derive(mechanism, "s3cret", 4096, SALT)
    stored_key, server_key = independent_keys(mechanism.hash_name, b"s3cret", SALT, 4096)
    assert credential == ScramCredential(SALT, stored_key, server_key, 4096)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_derive_key_lengths_follow_the_hash(mechanism: Mechanism) -> None:
    credential = derive(mechanism, "pw", 4096)
    size = hashlib.new(mechanism.hash_name).digest_size
    assert len(credential.stored_key) == len(credential.server_key) == size


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_derive_uses_a_fresh_random_salt_unless_given(mechanism: Mechanism) -> None:
    first = derive(mechanism, "pw", 4096)
    second = derive(mechanism, "pw", 4096)
    assert len(first.salt) == SALT_BYTES
    assert first.salt != second.salt
    assert first.stored_key != second.stored_key


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_password_matches_the_right_password(mechanism: Mechanism) -> None:
    credential = derive(mechanism, "correct horse", 4096)
    assert password_matches(mechanism, credential, "correct horse")


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("wrong", ["correct hors", "correct horse ", "Correct horse", ""])
def test_password_matches_is_false_for_a_wrong_password(mechanism: Mechanism, wrong: str) -> None:
    credential = derive(mechanism, "correct horse", 4096)
    assert not password_matches(mechanism, credential, wrong)


def test_password_matches_is_false_for_the_other_mechanism() -> None:
    credential = derive(Mechanism.SCRAM_SHA_256, "pw", 4096)
    assert not password_matches(Mechanism.SCRAM_SHA_512, credential, "pw")


@pytest.mark.parametrize("iterations", [MIN_ITERATIONS, 8192, MAX_ITERATIONS])
def test_derive_accepts_iterations_within_kafka_bounds(iterations: int) -> None:
    credential = derive(Mechanism.SCRAM_SHA_256, "pw", iterations, SALT)
    assert credential.iterations == iterations
    assert password_matches(Mechanism.SCRAM_SHA_256, credential, "pw")


@pytest.mark.parametrize("iterations", [4095, 16385, 0, -1, 1])
def test_derive_refuses_iterations_outside_kafka_bounds(iterations: int) -> None:
    with pytest.raises(ValueError):
        derive(Mechanism.SCRAM_SHA_512, "pw", iterations, SALT)


def test_kafka_bounds_are_4096_and_16384() -> None:
    assert (MIN_ITERATIONS, MAX_ITERATIONS) == (4096, 16384)


@pytest.mark.parametrize("iterations", [4095, 16385])
def test_password_matches_is_false_for_an_out_of_range_iteration_count(iterations: int) -> None:
    """Even a credential whose keys are right for the password is refused: the count is not trusted."""
    stored_key, server_key = independent_keys("sha256", b"pw", SALT, iterations)
    credential = ScramCredential(SALT, stored_key, server_key, iterations)
    assert not password_matches(Mechanism.SCRAM_SHA_256, credential, "pw")


@pytest.mark.parametrize("iterations", [0, -5, 10**9])
def test_password_matches_does_not_run_pbkdf2_for_absurd_iteration_counts(iterations: int) -> None:
    credential = ScramCredential(SALT, b"\x00" * 32, b"\x00" * 32, iterations)
    assert not password_matches(Mechanism.SCRAM_SHA_256, credential, "pw")  # returns at once


# -------------------- RFC 7677


RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC7677_AUTH_MESSAGE = (
    b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
)
RFC7677_CLIENT_PROOF = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC7677_SERVER_SIGNATURE = base64.b64decode("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def test_rfc7677_vector_keys_match_an_independent_computation() -> None:
    credential = derive(Mechanism.SCRAM_SHA_256, "pencil", 4096, RFC7677_SALT)
    assert (credential.stored_key, credential.server_key) == independent_keys("sha256", b"pencil", RFC7677_SALT, 4096)


def test_rfc7677_vector_client_proof_verifies_against_derived_stored_key() -> None:
    """The server side of RFC 7677's example: recover ClientKey from the proof, hash it, compare."""
    credential = derive(Mechanism.SCRAM_SHA_256, "pencil", 4096, RFC7677_SALT)
    client_signature = hmac.new(credential.stored_key, RFC7677_AUTH_MESSAGE, "sha256").digest()
    client_key = bytes(a ^ b for a, b in zip(RFC7677_CLIENT_PROOF, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == credential.stored_key


def test_rfc7677_vector_server_signature_from_derived_server_key() -> None:
    credential = derive(Mechanism.SCRAM_SHA_256, "pencil", 4096, RFC7677_SALT)
    signature = hmac.new(credential.server_key, RFC7677_AUTH_MESSAGE, "sha256").digest()
    assert signature == RFC7677_SERVER_SIGNATURE


def test_rfc7677_vector_password_matches() -> None:
    credential = derive(Mechanism.SCRAM_SHA_256, "pencil", 4096, RFC7677_SALT)
    assert password_matches(Mechanism.SCRAM_SHA_256, credential, "pencil")
    assert not password_matches(Mechanism.SCRAM_SHA_256, credential, "Pencil")


# -------------------- no SASLprep


FULLWIDTH_PASS = "\uff50\uff41\uff53\uff53"  # fullwidth 'pass', which SASLprep (NFKC) turns into 'pass'


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_non_ascii_password_is_hashed_as_plain_utf8(mechanism: Mechanism) -> None:
    credential = derive(mechanism, FULLWIDTH_PASS, 4096, SALT)
    assert (credential.stored_key, credential.server_key) == independent_keys(
        mechanism.hash_name, FULLWIDTH_PASS.encode("utf-8"), SALT, 4096
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_fullwidth_password_does_not_match_its_saslprep_form(mechanism: Mechanism) -> None:
    credential = derive(mechanism, FULLWIDTH_PASS, 4096, SALT)
    assert password_matches(mechanism, credential, FULLWIDTH_PASS)
    assert not password_matches(mechanism, credential, "pass")
    assert not password_matches(mechanism, derive(mechanism, "pass", 4096, SALT), FULLWIDTH_PASS)


def test_differs_from_scramp_which_applies_saslprep() -> None:
    """The reason the module does not use scramp.make_auth_info: scramp maps fullwidth 'pass' to 'pass'."""
    _, scramp_stored, _, _ = scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info(
        FULLWIDTH_PASS, iteration_count=4096, salt=SALT
    )
    ours = derive(Mechanism.SCRAM_SHA_256, FULLWIDTH_PASS, 4096, SALT)
    saslprepped = derive(Mechanism.SCRAM_SHA_256, "pass", 4096, SALT)
    assert scramp_stored == saslprepped.stored_key
    assert ours.stored_key != scramp_stored


def test_ascii_password_agrees_with_scramp() -> None:
    salt, stored, server, iterations = scramp.ScramMechanism("SCRAM-SHA-512").make_auth_info(
        "pencil", iteration_count=4096, salt=SALT
    )
    assert derive(Mechanism.SCRAM_SHA_512, "pencil", 4096, SALT) == ScramCredential(salt, stored, server, iterations)


# -------------------- tokens


HMAC_TEXT = "4yNy7/Z+zNgC0bevraCN9fOXatvHfn4ZrHtPzPlrbPxMD2i6+BNIueia0juqmA75Nxpj18hRCE7nMYHojrij4Q=="


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_brokers_token_credential_uses_the_base64_hmac_as_password_and_4096_iterations(mechanism: Mechanism) -> None:
    credential = derive(mechanism, HMAC_TEXT, 4096)
    assert credential.iterations == 4096
    assert (credential.stored_key, credential.server_key) == independent_keys(
        mechanism.hash_name, HMAC_TEXT.encode("utf-8"), credential.salt, 4096
    )
    assert password_matches(mechanism, credential, HMAC_TEXT)


def test_derive_draws_a_random_salt_each_time() -> None:
    first = derive(Mechanism.SCRAM_SHA_256, HMAC_TEXT, 4096)
    second = derive(Mechanism.SCRAM_SHA_256, HMAC_TEXT, 4096)
    assert first.salt != second.salt


def test_credential_repr_shows_no_key_material() -> None:
    credential = derive(Mechanism.SCRAM_SHA_256, "pw", 4096, SALT)
    text = repr(credential)
    for raw in (credential.salt, credential.stored_key, credential.server_key):
        assert base64.b64encode(raw).decode() not in text
        assert raw.hex() not in text
        assert repr(raw) not in text
