"""Who is calling: the ``Authorization`` header (Basic or Bearer) or a verified TLS client certificate
becomes a ``Caller``; anything else is NotAuthenticated.

A request with an ``Authorization`` header is that principal (as a SASL login over an SSL listener is in
Kafka); otherwise the certificate's subject, mapped by ``ssl.principal.mapping.rules``, is ``User:<name>``.
With ``ssl.client.auth=required`` a request without a verified certificate is refused whatever it carries.

With an ``AttemptGuard`` (the brute-force defence, ``app/domain/throttle.py``), a client address and
claimed principal (Basic user name or Bearer token id) that failed too often are refused with 429 before
any password hashing or ZooKeeper read, and failures are audited once per burst rather than per attempt.
"""

from __future__ import annotations

import base64
import binascii
import re
import ssl

from app.auth.basic import BasicAuthenticator
from app.auth.x500_name import principal_name_for
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Caller
from app.domain.errors import InvalidInput, NotAuthenticated
from app.domain.principal import KafkaPrincipal
from app.domain.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from app.domain.throttle import token_subject
from app.domain.token_secret import TOKEN_ID_PATTERN, decode_hmac
from app.service.attempts import AttemptGuard
from app.service.audit import Auditor
from app.service.tokens import TokenService

# Enough for a long user name and password; longer headers are refused before any decoding work.
MAX_AUTHORIZATION_LENGTH = 4096
_TOKEN_ID = re.compile(TOKEN_ID_PATTERN)


class Authenticator:
    def __init__(
        self,
        basic: BasicAuthenticator,
        tokens: TokenService,
        *,
        client_auth: str = "none",
        mapper: SslPrincipalMapper | None = None,
        auditor: Auditor | None = None,
        guard: AttemptGuard | None = None,
    ) -> None:
        self._basic = basic
        self._tokens = tokens
        self._auditor = auditor
        self._guard = guard
        self._client_auth = client_auth
        self._mapper = mapper or SslPrincipalMapper.from_rules("DEFAULT")

    def authenticate(self, authorization: str | None, host: str, client_cert_pem: str | None = None) -> Caller:
        if self._guard is None:
            return self._audited(authorization, host, client_cert_pem)
        scheme, principal, token_id = _claimed_identity(authorization, client_cert_pem)
        subject = principal or (token_subject(token_id) if token_id else None)
        self._guard.admit(host, subject, lambda: _denied(scheme, principal, token_id, "Too many failed attempts."))
        try:
            caller = self._authenticate(authorization, host, client_cert_pem)
        except NotAuthenticated as exc:
            self._guard.failed(host, subject, _denied(scheme, principal, token_id, exc.message))
            raise
        self._guard.succeeded(host, subject)
        return caller

    def _audited(self, authorization: str | None, host: str, client_cert_pem: str | None) -> Caller:
        """Without a guard: every failure is its own audit event."""
        try:
            return self._authenticate(authorization, host, client_cert_pem)
        except NotAuthenticated as exc:
            if self._auditor is not None:
                self._auditor.record(_denied(*_claimed_identity(authorization, client_cert_pem), exc.message))
            raise

    def _authenticate(self, authorization: str | None, host: str, client_cert_pem: str | None) -> Caller:
        if self._client_auth == "required" and client_cert_pem is None:
            raise NotAuthenticated("This listener requires a TLS client certificate.")
        if not authorization:
            if client_cert_pem is not None and self._client_auth != "none":
                return Caller(self._certificate_principal(client_cert_pem), host=host)
            raise NotAuthenticated("Authentication is required (Basic, Bearer or a TLS client certificate).")
        if len(authorization) > MAX_AUTHORIZATION_LENGTH:
            raise NotAuthenticated("The Authorization header is too long.")
        scheme, _, credentials = authorization.partition(" ")
        scheme = scheme.lower()
        credentials = credentials.strip()
        if scheme == "basic":
            return self._basic_caller(credentials, host)
        if scheme == "bearer":
            return self._token_caller(credentials, host)
        raise NotAuthenticated("Unsupported authentication scheme; use Basic or Bearer.")

    def _basic_caller(self, credentials: str, host: str) -> Caller:
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            raise NotAuthenticated("Malformed Basic credentials.") from None
        user_name, sep, password = decoded.partition(":")
        if not sep or not user_name or not password:
            raise NotAuthenticated("Malformed Basic credentials.")
        if not self._basic.authenticate(user_name, password):
            raise NotAuthenticated("Invalid user name or password.")
        return Caller(KafkaPrincipal.user(user_name), host=host)

    def _token_caller(self, credentials: str, host: str) -> Caller:
        token_id, sep, hmac_text = credentials.partition(":")
        if not sep or not _TOKEN_ID.fullmatch(token_id):
            raise NotAuthenticated("Bearer credentials must be <tokenId>:<base64 hmac>.")
        try:
            mac = decode_hmac(hmac_text)
        except InvalidInput:
            raise NotAuthenticated("Bearer credentials must be <tokenId>:<base64 hmac>.") from None
        token = self._tokens.verify(token_id, mac)
        if token is None:
            raise NotAuthenticated("Unknown, expired or invalid delegation token.")
        return Caller(token.authenticated_principal, host=host, token_id=token_id)

    def _certificate_principal(self, pem: str) -> KafkaPrincipal:
        try:
            name = principal_name_for(ssl.PEM_cert_to_DER_cert(pem), self._mapper)
        except NoMatchingRule:
            raise NotAuthenticated("No ssl.principal.mapping.rules rule applies to the client certificate.") from None
        except ValueError:
            raise NotAuthenticated("The client certificate could not be read.") from None
        if not name:
            raise NotAuthenticated("The client certificate maps to an empty principal name.")
        return KafkaPrincipal.user(name)


def _denied(scheme: str, principal: str | None, token_id: str | None, reason: str) -> AuditEvent:
    return AuditEvent(
        Action.AUTHENTICATION,
        Outcome.DENIED,
        principal=principal,
        token_id=token_id,
        details={"scheme": scheme, "reason": reason},
    )


def _claimed_identity(authorization: str | None, client_cert_pem: str | None) -> tuple[str, str | None, str | None]:
    """(scheme, claimed principal, token id) of a login, for the throttle and the audit trail. Never the
    password or the HMAC: only the user name of Basic credentials and the token id of Bearer ones."""
    if not authorization:
        return ("certificate" if client_cert_pem else "none"), None, None
    scheme, _, credentials = authorization.partition(" ")
    scheme = scheme.lower()[:16]
    if len(authorization) > MAX_AUTHORIZATION_LENGTH:
        return scheme, None, None
    if scheme == "basic":
        try:
            user_name = base64.b64decode(credentials.strip(), validate=True).decode("utf-8").partition(":")[0]
        except (binascii.Error, ValueError):
            return scheme, None, None
        return scheme, f"User:{user_name[:255]}" if user_name else None, None
    if scheme == "bearer":
        token_id = credentials.strip().partition(":")[0]
        return scheme, None, token_id if _TOKEN_ID.fullmatch(token_id) else None
    return scheme, None, None
