"""The Authorization header parsed once: the login it carries or why it cannot be checked, and the identity
it claims even when malformed (for the throttle and the audit trail), never the secret in ``repr``."""

from __future__ import annotations

import base64

import pytest

from app.auth.authorization_header import (
    JWT_TOO_LONG,
    MALFORMED_BASIC,
    MALFORMED_BEARER,
    MALFORMED_JWT,
    MAX_AUTHORIZATION_LENGTH,
    MAX_JWT_LENGTH,
    BasicLogin,
    BearerLogin,
    JwtLogin,
    PresentedCredentials,
    parse_authorization,
)
from app.domain.token_secret import encode_hmac

MAC = bytes(range(64))  # an HMAC-SHA512
HMAC_TEXT = encode_hmac(MAC)


def basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(("has_certificate", "scheme"), [(False, "none"), (True, "certificate")])
@pytest.mark.parametrize("header", [None, ""])
def test_no_header(header: str | None, has_certificate: bool, scheme: str) -> None:
    assert parse_authorization(header, has_certificate=has_certificate) == PresentedCredentials(scheme)


def test_a_basic_login() -> None:
    presented = parse_authorization(basic("alice:pw:with:colons"), has_certificate=False)
    assert presented == PresentedCredentials(
        "basic", present=True, claimed_principal="User:alice", login=BasicLogin("alice", "pw:with:colons")
    )


def test_a_bearer_login() -> None:
    presented = parse_authorization(f"bEaReR  tok1:{HMAC_TEXT} ", has_certificate=True)
    assert presented == PresentedCredentials(
        "bearer", present=True, claimed_token_id="tok1", login=BearerLogin("tok1", MAC)
    )


@pytest.mark.parametrize(
    ("header", "claimed"),
    [
        (basic("alice"), "User:alice"),  # no password: still charged to alice
        (basic("alice:"), "User:alice"),
        (basic(":pw"), None),
        ("Basic not-base64!", None),
        ("Basic " + base64.b64encode(b"\xff\xfe:pw").decode(), None),  # not UTF-8
    ],
)
def test_malformed_basic_credentials_keep_the_user_they_claim(header: str, claimed: str | None) -> None:
    presented = parse_authorization(header, has_certificate=False)
    assert (presented.login, presented.problem, presented.claimed_principal) == (None, MALFORMED_BASIC, claimed)


@pytest.mark.parametrize(
    ("header", "claimed"),
    [
        ("Bearer tok1", "tok1"),
        ("Bearer tok1:not base64", "tok1"),
        (f"Bearer bad/id:{HMAC_TEXT}", None),
        ("Bearer ", None),
    ],
)
def test_malformed_bearer_credentials_keep_the_token_they_claim(header: str, claimed: str | None) -> None:
    presented = parse_authorization(header, has_certificate=False)
    assert (presented.login, presented.problem, presented.claimed_token_id) == (None, MALFORMED_BEARER, claimed)


def test_another_scheme_is_unsupported_and_audited_by_at_most_16_characters() -> None:
    presented = parse_authorization("Digest" + "x" * 40 + " abc", has_certificate=False)
    assert presented.scheme == ("digest" + "x" * 10)
    assert presented.problem == "Unsupported authentication scheme; use Basic or Bearer."


def test_a_header_too_long_is_refused_without_decoding() -> None:
    presented = parse_authorization(basic("alice:" + "p" * MAX_AUTHORIZATION_LENGTH), has_certificate=False)
    assert presented == PresentedCredentials("basic", present=True, problem="The Authorization header is too long.")


def test_secrets_stay_out_of_repr() -> None:
    text = repr(parse_authorization(basic("alice:s3cret-pw"), has_certificate=False))
    assert "s3cret-pw" not in text and "alice" in text
    text = repr(parse_authorization(f"Bearer tok1:{HMAC_TEXT}", has_certificate=False))
    assert HMAC_TEXT not in text and repr(MAC) not in text and "tok1" in text


JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzcGFyayJ9.c2lnbmF0dXJl"


def test_a_bearer_jwt_is_told_apart_from_a_token_by_its_form() -> None:
    presented = parse_authorization(f"Bearer {JWT}", has_certificate=False)
    assert presented == PresentedCredentials("bearer", present=True, login=JwtLogin(JWT))
    assert JWT not in repr(presented)
    assert isinstance(parse_authorization(f"Bearer tok-1:{HMAC_TEXT}", has_certificate=False).login, BearerLogin)


@pytest.mark.parametrize("value", ["a.b", "a.b.c.d", "a..c", "a.b.c=", "a b.c.d", "a.b.c!"])
def test_a_dotted_bearer_value_that_is_not_three_base64url_parts_is_malformed(value: str) -> None:
    presented = parse_authorization(f"Bearer {value}", has_certificate=False)
    assert (presented.problem, presented.login) == (MALFORMED_JWT, None)


def test_an_unsigned_jwt_keeps_its_form_so_the_check_can_name_its_algorithm() -> None:
    assert parse_authorization("Bearer e30.e30.", has_certificate=False).login == JwtLogin("e30.e30.")


def test_a_jwt_may_be_longer_than_other_credentials_up_to_its_own_limit() -> None:
    longest = "a" * 10 + "." + "b" * (MAX_JWT_LENGTH - 22) + "." + "c" * 10
    assert len(longest) == MAX_JWT_LENGTH > MAX_AUTHORIZATION_LENGTH
    assert parse_authorization(f"Bearer {longest}", has_certificate=False).login == JwtLogin(longest)
    too_long = parse_authorization(f"Bearer {longest}x", has_certificate=False)
    assert (too_long.problem, too_long.login) == (JWT_TOO_LONG, None)
    huge = parse_authorization("Bearer " + "a." * 10_000 + "a", has_certificate=False)
    assert huge.problem == "The Authorization header is too long."
