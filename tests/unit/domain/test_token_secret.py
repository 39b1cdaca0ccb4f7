"""Token ids and HMACs (docs/kafka-compatibility.md#token-ids-hmacs-and-passwords)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest

from app.domain.errors import InvalidInput
from app.domain.token_secret import (
    HMAC_LENGTH,
    TOKEN_ID_PATTERN,
    TokenSecret,
    decode_hmac,
    encode_hmac,
    new_token_id,
)

VECTOR_SECRET = "test12345"
VECTOR_TOKEN_ID = "E8gTWaIxRUOaSRH7wY3N1w"
VECTOR_HMAC = "4yNy7/Z+zNgC0bevraCN9fOXatvHfn4ZrHtPzPlrbPxMD2i6+BNIueia0juqmA75Nxpj18hRCE7nMYHojrij4Q=="


# -------------------- HMAC


def test_hmac_matches_the_kafka_vector() -> None:
    assert encode_hmac(TokenSecret(VECTOR_SECRET).hmac(VECTOR_TOKEN_ID)) == VECTOR_HMAC


def test_hmac_is_plain_hmac_sha512_of_the_token_id_without_key_derivation() -> None:
    expected = hmac.new(b"another secret", b"someTokenId", hashlib.sha512).digest()
    assert TokenSecret("another secret").hmac("someTokenId") == expected


def test_hmac_uses_utf8_bytes_of_key_and_token_id() -> None:
    expected = hmac.new("clé".encode(), "idé".encode(), hashlib.sha512).digest()
    assert TokenSecret("clé").hmac("idé") == expected


def test_hmacs_of_many_tokens_are_each_ones_hmac() -> None:
    secret = TokenSecret("clé" * 50)  # longer than SHA-512's block: hashed first, as HMAC does
    ids = [VECTOR_TOKEN_ID, "idé", "", "E8gTWaIxRUOaSRH7wY3N1w"]
    assert list(secret.hmacs(ids)) == [secret.hmac(token_id) for token_id in ids]
    vector = TokenSecret(VECTOR_SECRET)
    assert list(vector.hmacs([VECTOR_TOKEN_ID])) == [vector.hmac(VECTOR_TOKEN_ID)]


def test_hmac_is_64_bytes() -> None:
    assert len(TokenSecret(VECTOR_SECRET).hmac(VECTOR_TOKEN_ID)) == HMAC_LENGTH == 64


def test_hmac_differs_per_secret_and_per_token_id() -> None:
    secret = TokenSecret(VECTOR_SECRET)
    assert secret.hmac("a") != secret.hmac("b")
    assert TokenSecret("other").hmac(VECTOR_TOKEN_ID) != secret.hmac(VECTOR_TOKEN_ID)


def test_encode_hmac_is_standard_padded_base64_of_88_characters() -> None:
    text = encode_hmac(TokenSecret(VECTOR_SECRET).hmac(VECTOR_TOKEN_ID))
    assert len(text) == 88
    assert text.endswith("==")
    assert "+" in text and "/" in text  # the vector needs the standard alphabet, not the url-safe one


def test_empty_secret_is_refused() -> None:
    with pytest.raises(ValueError):
        TokenSecret("")


# -------------------- matches


def test_matches_true_for_the_tokens_own_hmac() -> None:
    secret = TokenSecret(VECTOR_SECRET)
    assert secret.matches(VECTOR_TOKEN_ID, base64.b64decode(VECTOR_HMAC))


def test_matches_false_for_hmac_from_another_secret() -> None:
    other = TokenSecret("another secret").hmac(VECTOR_TOKEN_ID)
    assert not TokenSecret(VECTOR_SECRET).matches(VECTOR_TOKEN_ID, other)


def test_matches_false_for_hmac_of_another_token() -> None:
    secret = TokenSecret(VECTOR_SECRET)
    assert not secret.matches(VECTOR_TOKEN_ID, secret.hmac("AAAAAAAAAAAAAAAAAAAAAA"))


def test_matches_false_for_truncated_or_empty_candidate() -> None:
    secret = TokenSecret(VECTOR_SECRET)
    mac = secret.hmac(VECTOR_TOKEN_ID)
    assert not secret.matches(VECTOR_TOKEN_ID, mac[:-1])
    assert not secret.matches(VECTOR_TOKEN_ID, b"")


def test_matches_false_for_one_flipped_bit() -> None:
    secret = TokenSecret(VECTOR_SECRET)
    mac = bytearray(secret.hmac(VECTOR_TOKEN_ID))
    mac[-1] ^= 0x01
    assert not secret.matches(VECTOR_TOKEN_ID, bytes(mac))


# -------------------- secrecy


def test_repr_and_str_never_show_the_key() -> None:
    secret = TokenSecret("s3cr3t-key-value")
    for text in (repr(secret), str(secret), f"{secret}", f"{secret!r}", repr([secret]), repr({"k": secret})):
        assert "s3cr3t" not in text


def test_secret_key_is_not_reachable_through_vars() -> None:
    secret = TokenSecret("s3cr3t-key-value")
    assert not hasattr(secret, "__dict__")


# -------------------- token ids


def test_new_token_id_is_22_base64url_characters_without_padding() -> None:
    token_id = new_token_id()
    assert len(token_id) == 22
    assert re.fullmatch(r"[A-Za-z0-9_\-]{22}", token_id)


def test_new_token_id_decodes_to_16_bytes() -> None:
    token_id = new_token_id()
    assert len(base64.urlsafe_b64decode(token_id + "==")) == 16


def test_new_token_id_decodes_to_a_random_uuid() -> None:
    raw = base64.urlsafe_b64decode(new_token_id() + "==")
    assert raw[6] >> 4 == 4  # version 4
    assert raw[8] >> 6 == 0b10  # RFC 4122 variant


def test_new_token_id_is_unique() -> None:
    ids = {new_token_id() for _ in range(2_000)}
    assert len(ids) == 2_000


def test_new_token_id_matches_the_token_id_pattern() -> None:
    assert re.fullmatch(TOKEN_ID_PATTERN, new_token_id())


def test_vector_token_id_has_the_same_shape() -> None:
    assert len(base64.urlsafe_b64decode(VECTOR_TOKEN_ID + "==")) == 16


# -------------------- decode_hmac


def test_decode_hmac_accepts_the_vector() -> None:
    assert decode_hmac(VECTOR_HMAC) == base64.b64decode(VECTOR_HMAC)


def test_decode_hmac_round_trips_encode_hmac() -> None:
    mac = TokenSecret("x").hmac("y")
    assert decode_hmac(encode_hmac(mac)) == mac


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param(VECTOR_HMAC[:-4] + "==", id="too-short"),
        pytest.param(base64.b64encode(b"\x01" * 63).decode(), id="63-bytes"),
        pytest.param(base64.b64encode(b"\x01" * 65).decode(), id="65-bytes"),
        pytest.param(base64.b64encode(b"\x01" * 32).decode(), id="32-bytes"),
        pytest.param(VECTOR_HMAC + "A", id="trailing-character"),
        pytest.param(VECTOR_HMAC.replace("+", "-").replace("/", "_"), id="urlsafe-alphabet"),
        pytest.param(VECTOR_HMAC.rstrip("="), id="missing-padding"),
        pytest.param(VECTOR_HMAC[:-1], id="half-padding"),
        pytest.param(" " + VECTOR_HMAC, id="leading-space"),
        pytest.param(VECTOR_HMAC + "\n", id="trailing-newline"),
        pytest.param(VECTOR_HMAC[:40] + "\n" + VECTOR_HMAC[40:], id="embedded-newline"),
        pytest.param(VECTOR_HMAC[:10] + "*" + VECTOR_HMAC[11:], id="bad-character"),
        pytest.param(VECTOR_HMAC[:-3] + "===", id="too-much-padding"),
    ],
)
def test_decode_hmac_refuses_malformed_text(text: str) -> None:
    with pytest.raises(InvalidInput):
        decode_hmac(text)


@pytest.mark.parametrize("value", [None, 42, base64.b64decode(VECTOR_HMAC), VECTOR_HMAC.encode("ascii"), [VECTOR_HMAC]])
def test_decode_hmac_refuses_non_strings(value: object) -> None:
    with pytest.raises(InvalidInput):
        decode_hmac(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        VECTOR_HMAC.replace("+", "-").replace("/", "_"),
        VECTOR_HMAC.rstrip("="),
        VECTOR_HMAC + "AAAA",
        "secret-looking-hmac-value",
    ],
)
def test_decode_hmac_error_message_never_contains_the_input(text: str) -> None:
    with pytest.raises(InvalidInput) as excinfo:
        decode_hmac(text)
    message = str(excinfo.value)
    assert text not in message
    assert text[:20] not in message
    assert text not in excinfo.value.message
    assert text not in repr(excinfo.value)
