"""Who is calling: the ``Authorization`` header (Basic, a Bearer delegation token or a Bearer workload JWT) or a
verified TLS client certificate becomes a ``Caller``; anything else is NotAuthenticated.

A request with an ``Authorization`` header is that principal (as a SASL login over an SSL listener is in
Kafka); otherwise the certificate's subject, mapped by ``ssl.principal.mapping.rules``, is ``User:<name>``.
With ``ssl.client.auth=required`` a request without a verified certificate is refused whatever it carries.

With an ``AttemptGuard`` (the brute-force defence, ``app/domain/throttle.py``), a client address and claimed
principal (Basic user name, Bearer token id, or a JWT's unverified subject) that failed too often are refused
with 429 before any password hashing, ZooKeeper read or JWT check, and failures are audited once per burst
rather than per attempt.

No caller is ever kts's own cluster principal (``OwnIdentity``, app/auth/own_identity.py): whatever scheme
authenticated it, a caller that comes out as that principal is refused here, in ``_authenticate``, and a Basic
login naming it before its password is checked.
"""

from __future__ import annotations

import ssl
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from app.auth.authorization_header import BasicLogin, JwtLogin, PresentedCredentials, parse_authorization
from app.auth.basic import BasicAuthenticator, Verdict
from app.auth.own_identity import OwnIdentity
from app.domain.audit import Action, AuditEvent, Outcome
from app.domain.authorization import Caller
from app.domain.errors import NotAuthenticated
from app.domain.principal import KafkaPrincipal
from app.domain.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from app.domain.throttle import token_subject
from app.service.attempts import AttemptGuard, PasswordLogin
from app.service.audit import Auditor
from app.service.tokens import TokenService

if TYPE_CHECKING:
    # Only for its type: the JWT check and its libraries (PyJWT, cryptography's key types) are imported by the
    # composition root when sasl.oauthbearer.jwks.endpoint.url is set, and not at all otherwise (start-up time).
    from app.auth.workload_jwt import JwtAuthenticator

NOT_ENABLED = "JWT authentication is not enabled on this service (no sasl.oauthbearer.jwks.endpoint.url)."


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
        jwt: JwtAuthenticator | None = None,
        own: OwnIdentity | None = None,
    ) -> None:
        """``jwt`` checks Bearer JWTs; without it they are refused (no JWKS endpoint configured). ``own``: the
        principals kts itself is to the cluster, refused to every caller."""
        self._own = own or OwnIdentity()
        self._basic = basic
        self._jwt = jwt
        self._tokens = tokens
        self._auditor = auditor
        self._guard = guard
        self._client_auth = client_auth
        self._mapper = mapper or SslPrincipalMapper.from_rules("DEFAULT")

    def authenticate(self, authorization: str | None, host: str, client_cert_pem: str | None = None) -> Caller:
        presented = parse_authorization(authorization, has_certificate=client_cert_pem is not None)
        if isinstance(presented.login, JwtLogin) and self._jwt is not None:
            claimed = self._jwt.claimed_principal(presented.login.token)
            presented = replace(presented, claimed_principal=claimed)
        if self._guard is None:
            return self._audited(presented, host, client_cert_pem)
        token_id = presented.claimed_token_id
        subject = presented.claimed_principal or (token_subject(token_id) if token_id else None)
        # Only a password can be guessed: the account lockout counts and refuses Basic logins alone (a forged
        # JWT naming a user must not lock that user's workloads out).
        login = presented.login
        password = recall = None
        if isinstance(login, BasicLogin):
            password = PasswordLogin(f"User:{login.user_name}", login.password)
            recall = partial(self._recalled, login, host, client_cert_pem)
        return self._guard.attempt(
            host,
            subject,
            lambda reason: _denied(presented, reason),
            lambda: self._authenticate(presented, host, client_cert_pem),
            password=password,
            recall=recall,
        )

    def _recalled(self, login: BasicLogin, host: str, client_cert_pem: str | None) -> Caller | None:
        """The caller, when the verified-password cache holds these very credentials; None when it does not, or
        when the full check would refuse them whatever the password (it then decides, and says why)."""
        if self._client_auth == "required" and client_cert_pem is None:
            return None
        principal = KafkaPrincipal.user(login.user_name)
        if self._own.is_own(principal) or not self._basic.recall(login.user_name, login.password):
            return None
        return Caller(principal, host=host)

    def _audited(self, presented: PresentedCredentials, host: str, client_cert_pem: str | None) -> Caller:
        """Without a guard: every failure is its own audit event."""
        try:
            return self._authenticate(presented, host, client_cert_pem)
        except NotAuthenticated as exc:
            if self._auditor is not None:
                self._auditor.record(_denied(presented, exc.message))
            raise

    def _authenticate(self, presented: PresentedCredentials, host: str, client_cert_pem: str | None) -> Caller:
        caller = self._identify(presented, host, client_cert_pem)
        self._own.refuse(caller.principal)
        return caller

    def _identify(self, presented: PresentedCredentials, host: str, client_cert_pem: str | None) -> Caller:
        if self._client_auth == "required" and client_cert_pem is None:
            raise NotAuthenticated("This listener requires a TLS client certificate.")
        if not presented.present:
            if client_cert_pem is not None and self._client_auth != "none":
                return Caller(self._certificate_principal(client_cert_pem), host=host)
            raise NotAuthenticated("Authentication is required (Basic, Bearer or a TLS client certificate).")
        login = presented.login
        if login is None:
            raise NotAuthenticated(presented.problem or "Malformed credentials.")
        if isinstance(login, BasicLogin):
            # Before the password: a guess at kts's own cluster password must not learn whether it was right.
            self._own.refuse(KafkaPrincipal.user(login.user_name))
            verdict = self._basic.check(login.user_name, login.password)
            if verdict is not Verdict.ACCEPTED:
                raise NotAuthenticated("Invalid user name or password.", known=verdict is Verdict.REFUSED)
            return Caller(KafkaPrincipal.user(login.user_name), host=host)
        if isinstance(login, JwtLogin):
            if self._jwt is None:
                raise NotAuthenticated(NOT_ENABLED)
            return Caller(self._jwt.authenticate(login.token), host=host)
        token = self._tokens.verify(login.token_id, login.mac)
        if token is None:
            raise NotAuthenticated(
                "Unknown, expired or invalid delegation token.", known=self._tokens.is_known(login.token_id)
            )
        return Caller(token.authenticated_principal, host=host, token_id=login.token_id)

    def _certificate_principal(self, pem: str) -> KafkaPrincipal:
        # Imported with the first client certificate: its X.509 libraries (asn1crypto, cryptography) would be some
        # 60 ms of every replica's start-up, and most replicas never see a client certificate.
        from app.auth.x500_name import principal_name_for

        try:
            name = principal_name_for(ssl.PEM_cert_to_DER_cert(pem), self._mapper)
        except NoMatchingRule:
            raise NotAuthenticated("No ssl.principal.mapping.rules rule applies to the client certificate.") from None
        except ValueError:
            raise NotAuthenticated("The client certificate could not be read.") from None
        if not name:
            raise NotAuthenticated("The client certificate maps to an empty principal name.")
        return KafkaPrincipal.user(name)


def _denied(presented: PresentedCredentials, reason: str) -> AuditEvent:
    """A refused login, with the identity it claimed: never the password or the HMAC."""
    return AuditEvent(
        Action.AUTHENTICATION,
        Outcome.DENIED,
        principal=presented.claimed_principal,
        token_id=presented.claimed_token_id,
        details={"scheme": presented.scheme, "reason": reason},
    )
