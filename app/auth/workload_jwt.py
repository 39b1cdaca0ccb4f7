"""Workload JWTs as callers: a Kubernetes service-account token or any OIDC ID token, checked as a Kafka broker's
OAUTHBEARER validator checks it (KIP-768), with PyJWT.

A JWT authenticates as ``User:<prefix><sub>`` (``sasl.oauthbearer.principal.prefix``, none by default, and the claim
``sasl.oauthbearer.sub.claim.name`` names), a full principal: unlike a delegation token it may create tokens. With a
prefix such as ``jwt:`` JWT callers live in their own namespace: ``sub: admin`` is ``User:jwt:admin``, never the
SCRAM user or super user ``User:admin``. A subject that is empty, ``*`` or holds characters a principal name cannot
carry safely (``subject_problem``) is refused.

It must be signed by a key of the JWKS endpoint (``app/auth/jwks.py``) with an asymmetric algorithm (``none`` and
HMAC algorithms are refused before any key is looked up), by an RSA key of at least ``MIN_RSA_BITS`` bits, carry
``exp`` and ``iat`` (as Kafka requires), and match the expected issuer and audience when they are configured;
``exp``, ``nbf`` and ``iat`` are checked with ``clock_skew_s`` of leeway. A JWT that lives longer than
``max_lifetime_s`` (``exp - iat``) is refused: a leaked long-lived JWT would be a password nobody can change.

Each refusal is a NotAuthenticated whose message says which check failed and never repeats the token or
what it claims; an endpoint that cannot be fetched is StoreUnavailable (503), not a failed login.
"""

from __future__ import annotations

import time
import unicodedata
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
DEFAULT_MAX_LIFETIME_S = 86_400
# Separators and quotes of the places principals are written (super.users, ACL and CLI lists, JAAS), and "*",
# the wildcard principal of ACLs. Whitespace and control or other invisible characters are refused too.
_UNSAFE = frozenset(';,"\\*')
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
    principal_prefix: str = ""
    max_lifetime_s: int = DEFAULT_MAX_LIFETIME_S


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
        try:
            lifetime_s = _lifetime_s(claims)
        except (TypeError, ValueError, OverflowError):
            raise NotAuthenticated("The JWT's exp or iat claim is not a time.") from None
        if lifetime_s > self.policy.max_lifetime_s:
            raise NotAuthenticated(
                f"The JWT lives longer than {self.policy.max_lifetime_s} seconds "
                "(sasl.oauthbearer.max.lifetime.seconds)."
            )
        claim = self.policy.sub_claim
        subject = claims.get(claim)
        if not isinstance(subject, str) or not subject:
            raise NotAuthenticated(f"The JWT has no {claim} claim (a non-empty string).")
        if subject_problem(subject) is not None:
            raise NotAuthenticated(f"The JWT's {claim} claim is not a usable principal name.")
        try:
            return KafkaPrincipal.parse(f"User:{self.policy.principal_prefix}{subject}")
        except InvalidPrincipal:
            raise NotAuthenticated(f"The JWT's {claim} claim is not a usable principal name.") from None

    def claimed_principal(self, token: str) -> str | None:
        """``User:<sub>`` as the JWT claims it, unverified: what its failures are charged to and audited as."""
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except PyJWTError:
            return None
        subject = claims.get(self.policy.sub_claim)
        if not isinstance(subject, str) or not subject:
            return None
        return f"User:{self.policy.principal_prefix}{subject[:MAX_CLAIMED_SUBJECT_LENGTH]}"

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


def subject_problem(value: str) -> str | None:
    """Why ``value`` cannot be (part of) a JWT caller's principal name, or None. Refused: empty, ``*`` (what
    ACLs read as every principal) or holding it, whitespace, control and other invisible characters, and the
    separators and quotes of the places principal names are written (``;``, ``,``, ``"``, ``\\``)."""
    if not value:
        return "is empty"
    for character in value:
        if character in _UNSAFE:
            return f"holds {character!r}"
        if character.isspace() or unicodedata.category(character).startswith("C"):
            return "holds whitespace, a control or an invisible character"
    return None


def _lifetime_s(claims: dict[str, Any]) -> float:
    """How long the JWT is valid: from ``iat`` (required, as Kafka requires it; PyJWT has checked both are
    numbers) to ``exp``; without ``iat``, from now. An ``iat`` in the future counts from now."""
    expires = float(claims["exp"])
    now = time.time()  # PyJWT's own clock for exp, nbf and iat
    issued = claims.get("iat")
    start = now if issued is None else min(float(issued), now)
    return expires - start


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
