"""Workload JWT checks over a fixed key set: the principal a good JWT becomes (with the principal prefix), and one
refusal (with its reason) per way a JWT can be wrong: signature, algorithm, key size, kid, issuer, audience, times,
lifetime, subject."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from app.auth.jwks import SigningKey, parse_jwks
from app.auth.workload_jwt import DEFAULT_MAX_LIFETIME_S, JwtAuthenticator, JwtPolicy, subject_problem
from app.domain.errors import NotAuthenticated
from app.domain.principal import KafkaPrincipal
from tests.jwt_material import AUDIENCE, ISSUER, SPARK, claims_for, forge, jwks
from tests.jwt_material import JwtKey as Key

RSA = Key.rsa("rsa-1")
EC = Key.ec("ec-1")


class FixedKeys:
    def __init__(self, *keys: Key) -> None:
        self.keys = parse_jwks(json.dumps(jwks(*keys)).encode())

    def keys_for(self, kid: str | None) -> tuple[SigningKey, ...]:
        return self.keys if kid is None else tuple(key for key in self.keys if key.kid == kid)


def authenticator(*keys: Key, **policy: object) -> JwtAuthenticator:
    settings = {"issuer": ISSUER, "audiences": (AUDIENCE,), **policy}
    return JwtAuthenticator(FixedKeys(*(keys or (RSA, EC))), JwtPolicy(**settings))  # type: ignore[arg-type]


def refusal(token: str, checker: JwtAuthenticator | None = None) -> str:
    with pytest.raises(NotAuthenticated) as refused:
        (checker or authenticator()).authenticate(token)
    return refused.value.message


@pytest.mark.parametrize(
    "key",
    [
        RSA,
        EC,
        Key.rsa("ps", algorithm="PS256"),
        Key.rsa("rs512", bits=3072, algorithm="RS512"),
        Key.ec("p384", ec.SECP384R1(), "ES384"),
        Key.ec("p521", ec.SECP521R1(), "ES512"),
        Key.ed25519("ed"),
    ],
    ids=lambda key: key.algorithm,
)
def test_a_jwt_signed_by_a_published_key_is_its_subject_as_a_user(key: Key) -> None:
    assert authenticator(key).authenticate(key.mint()) == KafkaPrincipal.user(SPARK)


def test_a_key_published_without_alg_verifies_every_algorithm_of_its_type() -> None:
    undeclared = Key.rsa("plain", algorithm="PS384")
    undeclared.declare_alg = False
    assert authenticator(undeclared).authenticate(undeclared.mint()) == KafkaPrincipal.user(SPARK)


def test_the_subject_claim_name_is_configurable() -> None:
    token = RSA.mint(claims_for(sub="ignored", client_id="airflow-worker"))
    assert authenticator(sub_claim="client_id").authenticate(token) == KafkaPrincipal.user("airflow-worker")


def test_without_issuer_and_audience_settings_those_claims_are_not_checked() -> None:
    token = RSA.mint(claims_for(iss="https://elsewhere", aud="vault"))
    checker = JwtAuthenticator(FixedKeys(RSA), JwtPolicy())
    assert checker.authenticate(token) == KafkaPrincipal.user(SPARK)


def test_any_of_several_expected_audiences_will_do() -> None:
    token = RSA.mint(claims_for(aud=["other", "kafka"]))
    assert authenticator(audiences=("kts", "kafka")).authenticate(token) == KafkaPrincipal.user(SPARK)


def test_a_signature_by_another_key_is_refused() -> None:
    impostor = Key.rsa(RSA.kid)  # same kid, another key
    assert refusal(impostor.mint()) == "The JWT's signature does not verify."


def test_a_tampered_payload_is_refused() -> None:
    header, _, signature = RSA.mint().split(".")
    forged = forge({}, claims_for(sub="User:admin")).split(".")[1]
    assert refusal(f"{header}.{forged}.{signature}") == "The JWT's signature does not verify."


@pytest.mark.parametrize(
    "token",
    [
        forge({"alg": "none", "kid": RSA.kid}, claims_for()),
        forge({"alg": "None", "kid": RSA.kid}, claims_for()),
        forge({"alg": "HS256", "kid": RSA.kid}, claims_for(), secret=RSA.public_pem()),
        forge({"alg": "HS512", "kid": RSA.kid}, claims_for(), secret=b"secret"),
        forge({"kid": RSA.kid}, claims_for(), secret=b"secret"),
    ],
    ids=["none", "None", "HS256-public-key-as-secret", "HS512", "no-alg"],
)
def test_unsigned_and_hmac_jwts_are_refused_before_any_key_is_looked_up(token: str) -> None:
    class NoKeys:
        def keys_for(self, kid: str | None) -> tuple[SigningKey, ...]:
            raise AssertionError("no key lookup for a refused algorithm")

    message = refusal(token, JwtAuthenticator(NoKeys()))
    assert message.startswith("The JWT's signature algorithm is not accepted (only RS256")


def test_an_oct_key_in_the_jwk_set_is_never_used() -> None:
    document = jwks(RSA)
    document["keys"].append({"kty": "oct", "kid": "hmac", "k": "c2VjcmV0", "alg": "HS256"})
    keys = parse_jwks(json.dumps(document).encode())
    assert [key.kid for key in keys] == [RSA.kid]


def test_an_es256_jwt_naming_an_rsa_key_is_refused() -> None:
    mixed = Key(RSA.kid, EC.private, "ES256")
    assert refusal(mixed.mint()) == "The JWT's kid names no key of the JWKS endpoint that fits its algorithm."


def test_rsa_keys_under_2048_bits_are_refused() -> None:
    small = Key.rsa("small", bits=1024)
    assert refusal(small.mint(), authenticator(small)) == "The JWT is signed with an RSA key under 2048 bits."


def test_an_unknown_kid_is_refused() -> None:
    assert refusal(Key.rsa("rotated-in").mint()) == (
        "The JWT's kid names no key of the JWKS endpoint that fits its algorithm."
    )


def test_without_kid_the_only_fitting_key_is_used_and_several_are_refused() -> None:
    token = forge_without_kid(RSA)
    assert authenticator(RSA, EC).authenticate(token) == KafkaPrincipal.user(SPARK)
    other = Key.rsa("rsa-2")
    assert refusal(token, authenticator(RSA, other)) == (
        "Several keys of the JWKS endpoint fit the JWT; it must name one by its kid."
    )


def forge_without_kid(key: Key) -> str:
    import jwt

    return jwt.encode(claims_for(), key.private, algorithm=key.algorithm)


@pytest.mark.parametrize(
    ("make_claims", "reason"),
    [
        (lambda: claims_for(iss="https://evil.example"), "The JWT is not from the expected issuer."),
        (lambda: claims_for(aud="vault"), "The JWT is not meant for this service (audience)."),
        (lambda: claims_for(lifetime_s=-31), "The JWT has expired."),
        (lambda: claims_for(issued_s_ago=-3600), "The JWT is not valid yet (nbf or iat in the future)."),
        (lambda: claims_for(nbf=int(time.time()) + 3600), "The JWT is not valid yet (nbf or iat in the future)."),
        (lambda: claims_for(sub=None), "The JWT has no sub claim (a non-empty string)."),
        (lambda: claims_for(sub=""), "The JWT has no sub claim (a non-empty string)."),
        (lambda: claims_for(sub=42), "The JWT has no sub claim (a non-empty string)."),
        (lambda: claims_for(sub="bad\nname"), "The JWT's sub claim is not a usable principal name."),
        (lambda: claims_for(sub="*"), "The JWT's sub claim is not a usable principal name."),
        (lambda: claims_for(sub="admin;User:ops"), "The JWT's sub claim is not a usable principal name."),
        (lambda: claims_for(sub=" admin"), "The JWT's sub claim is not a usable principal name."),
        (lambda: claims_for(sub="ad\u200bmin"), "The JWT's sub claim is not a usable principal name."),
        (
            lambda: claims_for(lifetime_s=DEFAULT_MAX_LIFETIME_S + 60),
            "The JWT lives longer than 86400 seconds (sasl.oauthbearer.max.lifetime.seconds).",
        ),
        (
            lambda: claims_for(lifetime_s=10 * 365 * 86_400, issued_s_ago=5 * 365 * 86_400),
            "The JWT lives longer than 86400 seconds (sasl.oauthbearer.max.lifetime.seconds).",
        ),
        (lambda: {key: value for key, value in claims_for().items() if key != "exp"}, "The JWT has no exp claim."),
        (lambda: {key: value for key, value in claims_for().items() if key != "iat"}, "The JWT has no iat claim."),
        (lambda: {**claims_for(), "exp": "soon"}, "The JWT cannot be decoded."),
    ],
    ids=[
        "issuer",
        "audience",
        "expired",
        "iat-future",
        "nbf-future",
        "no-sub",
        "empty-sub",
        "number-sub",
        "control-character-sub",
        "wildcard-sub",
        "separator-sub",
        "whitespace-sub",
        "invisible-character-sub",
        "lives-over-a-day",
        "issued-years-ago-for-ten-years",
        "no-exp",
        "no-iat",
        "exp-not-a-time",
    ],
)
def test_claims_that_do_not_fit_are_refused_with_the_reason(
    make_claims: Callable[[], dict[str, object]], reason: str
) -> None:
    """The claims are made when the test runs (times are real ones), far from every limit."""
    assert refusal(RSA.mint(make_claims())) == reason


def test_times_within_the_clock_skew_are_accepted() -> None:
    late = RSA.mint(claims_for(lifetime_s=-60))  # expired a minute ago
    early = RSA.mint(claims_for(issued_s_ago=-60))  # issued a minute from now
    lenient = authenticator(clock_skew_s=3600)
    assert lenient.authenticate(late) == KafkaPrincipal.user(SPARK)
    assert lenient.authenticate(early) == KafkaPrincipal.user(SPARK)
    assert refusal(late, authenticator(clock_skew_s=0)) == "The JWT has expired."
    assert refusal(early, authenticator(clock_skew_s=0)) == "The JWT is not valid yet (nbf or iat in the future)."


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        ("a.b.c", "The JWT cannot be decoded."),
        ("!!.??.~~", "The JWT cannot be decoded."),
        ("e30.e30.", "The JWT's signature algorithm is not accepted"),  # {} as header: no alg
        (f"eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIn0.bm90IGpzb24.{'A' * 342}", "The JWT's signature does not verify."),
    ],
)
def test_garbage_is_refused(token: str, reason: str) -> None:
    assert refusal(token).startswith(reason)


def test_the_claimed_principal_is_the_unverified_subject_cut_short() -> None:
    checker = authenticator()
    assert checker.claimed_principal(Key.rsa("whatever").mint()) == f"User:{SPARK}"
    assert checker.claimed_principal(RSA.mint(claims_for(sub="x" * 1000))) == "User:" + "x" * 255
    assert checker.claimed_principal(RSA.mint(claims_for(sub=None))) is None
    assert checker.claimed_principal("not.a.jwt") is None


def test_a_prefix_puts_jwt_callers_in_a_namespace_of_their_own() -> None:
    prefixed = authenticator(principal_prefix="jwt:")
    assert prefixed.authenticate(RSA.mint(sub="admin")) == KafkaPrincipal.user("jwt:admin")
    assert prefixed.authenticate(RSA.mint()) == KafkaPrincipal.user(f"jwt:{SPARK}")
    assert prefixed.claimed_principal(RSA.mint(sub="admin")) == "User:jwt:admin"
    assert authenticator().authenticate(RSA.mint(sub="admin")) == KafkaPrincipal.user("admin")  # the default: none
    assert refusal(RSA.mint(sub="*"), prefixed) == "The JWT's sub claim is not a usable principal name."


def test_the_lifetime_bound_is_configurable_and_counts_from_iat() -> None:
    hour = RSA.mint(claims_for(lifetime_s=3600))
    assert authenticator(max_lifetime_s=3600).authenticate(hour) == KafkaPrincipal.user(SPARK)
    assert refusal(hour, authenticator(max_lifetime_s=3599)) == (
        "The JWT lives longer than 3599 seconds (sasl.oauthbearer.max.lifetime.seconds)."
    )
    # issued long ago, expiring soon: what counts is exp - iat, not what is left
    old = RSA.mint(claims_for(lifetime_s=3 * 86_400, issued_s_ago=3 * 86_400 - 600))
    assert refusal(old) == "The JWT lives longer than 86400 seconds (sasl.oauthbearer.max.lifetime.seconds)."


@pytest.mark.parametrize(
    "subject",
    [SPARK, "alice", "auth0|5f1c", "repo:octo-org/app:ref:refs/heads/main", "jo@example.com", "Zoë", "123456789"],
)
def test_subjects_identity_providers_issue_are_usable(subject: str) -> None:
    assert subject_problem(subject) is None
    assert authenticator().authenticate(RSA.mint(sub=subject)) == KafkaPrincipal.user(subject)


@pytest.mark.parametrize(
    "subject", ["", "*", "svc*", "a;b", "a,b", 'a"b', "a\\b", "a b", "a\tb", "a\x7fb", "a\u00a0b", "a\u202eb"]
)
def test_subjects_a_principal_name_cannot_hold_safely_are_refused(subject: str) -> None:
    assert subject_problem(subject) is not None
