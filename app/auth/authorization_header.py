"""The ``Authorization`` header parsed once into what it presents: a Basic login, a Bearer delegation token
(``<tokenId>:<hmac>``), a Bearer JWT (three base64url parts joined by dots), or a reason it
cannot be checked, plus the identity it claims (for the brute-force throttle and the audit trail).

The claimed identity is read even from malformed credentials (a Basic user name without a password, a
token id without an HMAC), so that failures are charged to what they claim. It never holds the password
or the HMAC: those sit only in the login, hidden from ``repr``.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

from app.domain.errors import InvalidInput
from app.domain.token_secret import TOKEN_ID_PATTERN, decode_hmac

# Enough for a long user name and password; longer headers are refused before any decoding work.
MAX_AUTHORIZATION_LENGTH = 4096
# A Kubernetes service-account token or an OIDC ID token is 1 to 2 KiB; some identity providers add groups.
MAX_JWT_LENGTH = 8192
_BEARER_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
MAX_AUDITED_SCHEME_LENGTH = 16
MAX_CLAIMED_USER_LENGTH = 255
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)

MALFORMED_BASIC = "Malformed Basic credentials."
MALFORMED_BEARER = "Bearer credentials must be <tokenId>:<base64 hmac>."
MALFORMED_JWT = "A Bearer JWT must be three base64url parts joined by dots."
JWT_TOO_LONG = f"The JWT is longer than {MAX_JWT_LENGTH} characters."


@dataclass(frozen=True, slots=True)
class BasicLogin:
    user_name: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class BearerLogin:
    token_id: str
    mac: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class JwtLogin:
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class PresentedCredentials:
    """``scheme`` is the lower-cased scheme as audited, or ``certificate``/``none`` without a header.
    With a header, exactly one of ``login`` and ``problem`` is set."""

    scheme: str
    present: bool = False  # whether the request carries an Authorization header
    claimed_principal: str | None = None
    claimed_token_id: str | None = None
    login: BasicLogin | BearerLogin | JwtLogin | None = None
    problem: str | None = None  # why the credentials cannot be checked (the 401 message)


def parse_authorization(header: str | None, *, has_certificate: bool) -> PresentedCredentials:
    if not header:
        return PresentedCredentials("certificate" if has_certificate else "none")
    scheme_text, _, rest = header.partition(" ")
    scheme = scheme_text.lower()[:MAX_AUDITED_SCHEME_LENGTH]
    if len(header) > MAX_AUTHORIZATION_LENGTH + MAX_JWT_LENGTH:
        return PresentedCredentials(scheme, present=True, problem="The Authorization header is too long.")
    credentials = rest.strip()
    if scheme == "bearer" and "." in credentials and ":" not in credentials:
        return _jwt(credentials)
    if len(header) > MAX_AUTHORIZATION_LENGTH:
        return PresentedCredentials(scheme, present=True, problem="The Authorization header is too long.")
    if scheme == "basic":
        return _basic(credentials)
    if scheme == "bearer":
        return _bearer(credentials)
    return PresentedCredentials(scheme, present=True, problem="Unsupported authentication scheme; use Basic or Bearer.")


def _basic(credentials: str) -> PresentedCredentials:
    try:
        decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return PresentedCredentials("basic", present=True, problem=MALFORMED_BASIC)
    user_name, sep, password = decoded.partition(":")
    claimed = f"User:{user_name[:MAX_CLAIMED_USER_LENGTH]}" if user_name else None
    if not sep or not user_name or not password:
        return PresentedCredentials("basic", present=True, claimed_principal=claimed, problem=MALFORMED_BASIC)
    return PresentedCredentials("basic", present=True, claimed_principal=claimed, login=BasicLogin(user_name, password))


def _jwt(credentials: str) -> PresentedCredentials:
    """A Bearer value with a dot and no colon: a JWT (token ids have no dot, ``tokenId:hmac`` has a colon)."""
    if len(credentials) > MAX_JWT_LENGTH:
        return PresentedCredentials("bearer", present=True, problem=JWT_TOO_LONG)
    if not _BEARER_JWT.fullmatch(credentials):
        return PresentedCredentials("bearer", present=True, problem=MALFORMED_JWT)
    return PresentedCredentials("bearer", present=True, login=JwtLogin(credentials))


def _bearer(credentials: str) -> PresentedCredentials:
    token_id, sep, hmac_text = credentials.partition(":")
    if not _TOKEN_ID.fullmatch(token_id):
        return PresentedCredentials("bearer", present=True, problem=MALFORMED_BEARER)
    if not sep:
        return PresentedCredentials("bearer", present=True, claimed_token_id=token_id, problem=MALFORMED_BEARER)
    try:
        mac = decode_hmac(hmac_text)
    except InvalidInput:
        return PresentedCredentials("bearer", present=True, claimed_token_id=token_id, problem=MALFORMED_BEARER)
    return PresentedCredentials("bearer", present=True, claimed_token_id=token_id, login=BearerLogin(token_id, mac))
