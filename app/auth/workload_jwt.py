"""Workload JWTs as callers: a Kubernetes service-account token or any OIDC ID token, checked as a Kafka broker's
OAUTHBEARER validator checks it (KIP-768), with PyJWT.

A JWT authenticates as ``User:<sub>`` (``sasl.oauthbearer.sub.claim.name``), a full principal: unlike a delegation
token it may create tokens. It must be signed by a key of the JWKS endpoint (``app/auth/jwks.py``) with an
asymmetric algorithm (``none`` and HMAC algorithms are refused before any key is looked up), by an RSA key of
at least ``MIN_RSA_BITS`` bits, carry ``exp`` and ``iat`` (as Kafka requires), and match the expected issuer and
audience when they are configured; ``exp``, ``nbf`` and ``iat`` are checked with ``clock_skew_s`` of leeway.

Each refusal is a NotAuthenticated whose message says which check failed and never repeats the token or
what it claims; an endpoint that cannot be fetched is StoreUnavailable (503), not a failed login.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from jwt.exceptions import (
    DecodeError,
    ExpiredSignatureError,
    ImmatureSignatureError,
    InvalidAlgorithmError,
    InvalidAudienceError,
    InvalidIssuedAtError,
    InvalidIssuerError,
    InvalidSignatureError,
    InvalidTokenError,
    MissingRequiredClaimError,
    PyJWTError,
)

from app.auth.jwks import ALLOWED_ALGORITHMS, SigningKey
from app.domain.errors import InvalidPrincipal, NotAuthenticated
from app.domain.principal import KafkaPrincipal

MIN_RSA_BITS = 2048
MAX_CLAIMED_SUBJECT_LENGTH = 255
NOT_ENABLED = "JWT authentication is not enabled on this service (no sasl.oauthbearer.jwks.endpoint.url)."
_ALLOWED = ", ".join(ALLOWED_ALGORITHMS)


class SigningKeys(Protocol):
    """Where the keys come from (``JwksKeys``)."""

    def keys_for(self, kid: str | None) -> tuple[SigningKey, ...]: ...


@dataclass(frozen=True, slots=True)
class JwtPolicy:
    """The checks of the ``sasl.oauthbearer.*`` settings; ``None`` or empty skips a check, as in Kafka."""

    issuer: str | None = None
    audiences: tuple[str, ...] = ()
    sub_claim: str = "sub"
    clock_skew_s: int = 30


@dataclass(frozen=True, slots=True)
class JwtAuthenticator:
    keys: SigningKeys = field(repr=False)
    policy: JwtPolicy = JwtPolicy()

    def authenticate(self, token: str) -> KafkaPrincipal:
        """The principal the JWT names, or NotAuthenticated (StoreUnavailable when the keys cannot be had)."""
        try:
            header = jwt.get_unverified_header(token)
        except PyJWTError:
            raise NotAuthenticated("The JWT cannot be decoded.") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in ALLOWED_ALGORITHMS:  # "none", HS256... refused before any key is looked up
            raise NotAuthenticated(f"The JWT's signature algorithm is not accepted (only {_ALLOWED}).")
        if kid is not None and not isinstance(kid, str):
            raise NotAuthenticated("The JWT's kid header is not a string.")
        candidates = [key for key in self.keys.keys_for(kid) if algorithm in key.algorithms]
        if not candidates:
            if kid is None:
                raise NotAuthenticated("The JWT names no kid and no key of the JWKS endpoint fits its algorithm.")
            raise NotAuthenticated("The JWT's kid names no key of the JWKS endpoint that fits its algorithm.")
        if len(candidates) > 1:
            raise NotAuthenticated("Several keys of the JWKS endpoint fit the JWT; it must name one by its kid.")
        key = candidates[0].key
        if isinstance(key, RSAPublicKey) and key.key_size < MIN_RSA_BITS:
            raise NotAuthenticated(f"The JWT is signed with an RSA key under {MIN_RSA_BITS} bits.")
        claims = self._decode(token, key, algorithm)
        subject = claims.get(self.policy.sub_claim)
        if not isinstance(subject, str) or not subject:
            raise NotAuthenticated(f"The JWT has no {self.policy.sub_claim} claim (a non-empty string).")
        try:
            return KafkaPrincipal.parse(f"User:{subject}")
        except InvalidPrincipal:
            raise NotAuthenticated(f"The JWT's {self.policy.sub_claim} claim is not a usable principal name.") from None

    def claimed_principal(self, token: str) -> str | None:
        """``User:<sub>`` as the JWT claims it, unverified: what its failures are charged to and audited as."""
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except PyJWTError:
            return None
        subject = claims.get(self.policy.sub_claim)
        if not isinstance(subject, str) or not subject:
            return None
        return f"User:{subject[:MAX_CLAIMED_SUBJECT_LENGTH]}"

    def _decode(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        policy = self.policy
        audiences: Sequence[str] | None = policy.audiences or None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=audiences,
                issuer=policy.issuer,
                leeway=policy.clock_skew_s,
                options={
                    "require": ["exp", "iat"],
                    "verify_aud": audiences is not None,
                    "verify_iss": policy.issuer is not None,
                    "verify_sub": False,  # the sub claim name is ours to check, below
                },
            )
        except PyJWTError as exc:
            raise NotAuthenticated(_reason(exc)) from None
        return claims


def _reason(exc: PyJWTError) -> str:
    """One sentence per kind of failure, in the order of PyJWT's exception tree (subclasses first)."""
    reasons: tuple[tuple[type[PyJWTError], str], ...] = (
        (InvalidSignatureError, "The JWT's signature does not verify."),
        (ExpiredSignatureError, "The JWT has expired."),
        (ImmatureSignatureError, "The JWT is not valid yet (nbf or iat in the future)."),
        (InvalidIssuedAtError, "The JWT's iat claim is not a time."),
        (InvalidAudienceError, "The JWT is not meant for this service (audience)."),
        (InvalidIssuerError, "The JWT is not from the expected issuer."),
        (InvalidAlgorithmError, "The JWT's signature algorithm does not fit its key."),
        (DecodeError, "The JWT cannot be decoded."),
    )
    if isinstance(exc, MissingRequiredClaimError):
        return f"The JWT has no {exc.claim} claim."
    for error_type, reason in reasons:
        if isinstance(exc, error_type):
            return reason
    if isinstance(exc, InvalidTokenError):
        return "The JWT is not valid."
    return "The JWT cannot be checked with the key it names."
