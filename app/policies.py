"""What the settings choose, as the rules the services and the authenticator apply (``Policies``): token rules and
quotas, the ACL authorizer, the failure throttle and the account lockout, the workload JWT check, kts's own identity.
Read once by the composition root (app/runtime.py), whichever backend serves."""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.auth.own_identity import OwnIdentity
from app.domain.acl import AclAuthorizer
from app.domain.clock import Clock
from app.domain.lockout import AccountLockout, LockoutPolicy
from app.domain.ssl_principal_mapper import SslPrincipalMapper
from app.domain.throttle import FailureThrottle, ThrottlePolicy
from app.domain.token_quota import TokenQuota
from app.domain.token_rules import TokenPolicy
from app.service.backend import ClusterBackend
from app.settings import Settings

if TYPE_CHECKING:
    from app.auth.workload_jwt import JwtAuthenticator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Policies:
    """The rules one replica applies, as the settings and its backend choose them."""

    jwt: JwtAuthenticator | None  # the workload JWT check; None without a JWKS endpoint URL
    identity: OwnIdentity  # kts's own principals, which no caller may be
    authorizer: AclAuthorizer
    token: TokenPolicy
    quota: TokenQuota
    lockout: AccountLockout
    verify_throttle: FailureThrottle | None  # None: the failure throttle is off
    login_throttle: FailureThrottle | None  # None: neither the failure throttle nor the lockout is on
    locks_logins: bool  # ``auth.lockout.threshold`` above 0: refused logins count towards locking the account
    mapper: SslPrincipalMapper


def policies(settings: Settings, clock: Clock, backend: ClusterBackend) -> Policies:
    """``backend``: whose ACLs the authorizer reads, who kts is to it, and the renewers it names on every token."""
    jwt = jwt_authenticator(settings, clock)
    own = backend.own_login
    identity = OwnIdentity(own.configured, own.learned, source=own.source)
    lockout_on = settings.auth_lockout_threshold > 0
    failures = settings.auth_failures_max, settings.auth_failures_address_max
    window_ms, keys = settings.auth_failures_window_ms, settings.auth_throttle_max_keys
    verify = ThrottlePolicy.of(*failures, window_ms=window_ms, max_keys=keys, lockout=False)
    login = ThrottlePolicy.of(*failures, window_ms=window_ms, max_keys=keys, lockout=lockout_on)
    return Policies(
        jwt=jwt,
        identity=identity,
        authorizer=AclAuthorizer(
            settings.super_user_principals,
            backend.acl_view.snapshot,
            allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
        ),
        token=TokenPolicy(
            max_lifetime_ms=settings.delegation_token_max_lifetime_ms,
            default_renew_ms=settings.delegation_token_expiry_time_ms,
            create_for_super_users=settings.token_create_for_super_users,
            added_renewers=backend.renewers_added,
        ),
        quota=TokenQuota(
            per_owner=settings.token_quota_per_owner,
            per_requester=settings.token_quota_per_requester,
            exempt_super_users=settings.token_quota_exempt_super_users,
        ),
        lockout=AccountLockout(
            LockoutPolicy(
                threshold=max(1, settings.auth_lockout_threshold),  # 0 (off): built for unlocking what is left only
                window_ms=settings.auth_lockout_window_ms,
                duration_ms=settings.auth_lockout_duration_ms,
                max_keys=settings.auth_throttle_max_keys,
            ),
            clock,
        ),
        verify_throttle=None if verify is None else FailureThrottle(verify, clock),
        login_throttle=None if login is None else FailureThrottle(login, clock),
        locks_logins=lockout_on,
        mapper=SslPrincipalMapper.from_rules(settings.ssl_principal_mapping_rules),
    )


def jwt_authenticator(settings: Settings, clock: Clock) -> JwtAuthenticator | None:
    """The workload JWT check of the ``sasl.oauthbearer.*`` settings; None without a JWKS endpoint URL."""
    url = settings.sasl_oauthbearer_jwks_endpoint_url
    if url is None:
        return None
    # Imported only here: PyJWT and cryptography's key types cost a replica without JWTs start-up time for nothing.
    from app.auth.jwks import JwksKeys, fetcher
    from app.auth.workload_jwt import JwtAuthenticator, JwtPolicy

    cafile = settings.sasl_oauthbearer_jwks_endpoint_cafile
    context = ssl.create_default_context(cafile=str(cafile)) if cafile is not None else None
    if not settings.jwt_audiences:
        log.warning(
            "sasl.oauthbearer.expected.audience is not set: kts accepts JWTs meant for any service of the issuer"
        )
    refresh_ms = settings.sasl_oauthbearer_jwks_endpoint_refresh_ms
    keys = JwksKeys(url, fetcher(url, context), refresh_ms=refresh_ms, clock=clock)
    policy = JwtPolicy(
        issuer=settings.sasl_oauthbearer_expected_issuer or None,
        audiences=settings.jwt_audiences,
        sub_claim=settings.sasl_oauthbearer_sub_claim_name,
        clock_skew_s=settings.sasl_oauthbearer_clock_skew_seconds,
        principal_prefix=settings.sasl_oauthbearer_principal_prefix,
        max_lifetime_s=settings.sasl_oauthbearer_max_lifetime_seconds,
    )
    return JwtAuthenticator(keys, policy)
