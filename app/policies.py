"""What the settings choose, as the policies the services and the authenticator apply: token rules and quotas, the
ACL authorizer's defaults, the failure throttle and the account lockout, the workload JWT check. Read once by the
composition root (app/runtime.py); whichever backend serves, the same."""

from __future__ import annotations

import logging
import ssl
from typing import TYPE_CHECKING

from app.domain.acl import AclAuthorizer
from app.domain.clock import Clock
from app.domain.lockout import LockoutPolicy
from app.domain.principal import KafkaPrincipal
from app.domain.throttle import ThrottlePolicy
from app.domain.token_quota import TokenQuota
from app.domain.token_rules import TokenPolicy
from app.service.ports import AclView
from app.settings import Settings

if TYPE_CHECKING:
    from app.auth.workload_jwt import JwtAuthenticator

log = logging.getLogger(__name__)


def token_policy(settings: Settings, renewers_added: tuple[KafkaPrincipal, ...]) -> TokenPolicy:
    """``renewers_added``: those the backend names renewers of every token created (``token.renewers.add``)."""
    return TokenPolicy(
        max_lifetime_ms=settings.delegation_token_max_lifetime_ms,
        default_renew_ms=settings.delegation_token_expiry_time_ms,
        create_for_super_users=settings.token_create_for_super_users,
        added_renewers=renewers_added,
    )


def token_quota(settings: Settings) -> TokenQuota:
    return TokenQuota(
        per_owner=settings.token_quota_per_owner,
        per_requester=settings.token_quota_per_requester,
        exempt_super_users=settings.token_quota_exempt_super_users,
    )


def authorizer(settings: Settings, view: AclView) -> AclAuthorizer:
    return AclAuthorizer(
        settings.super_user_principals,
        view.snapshot,
        allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
    )


def lockout_policy(settings: Settings) -> LockoutPolicy:
    return LockoutPolicy(
        threshold=max(1, settings.auth_lockout_threshold),  # 0 (off): built for unlocking what is left only
        window_ms=settings.auth_lockout_window_ms,
        duration_ms=settings.auth_lockout_duration_ms,
        max_keys=settings.auth_throttle_max_keys,
    )


def throttle_policy(settings: Settings, *, lockout: bool) -> ThrottlePolicy | None:
    """The ``auth.failures.*`` throttle of one kind of attempt; ``lockout``: whether the account lockout counts these
    attempts too. None when neither is on."""
    if settings.auth_failures_max == 0:
        if not lockout:
            return None
        return ThrottlePolicy.bursts_only(
            window_ms=settings.auth_failures_window_ms, max_keys=settings.auth_throttle_max_keys
        )
    return ThrottlePolicy(
        max_failures=settings.auth_failures_max,
        address_max_failures=settings.auth_failures_address_max,
        window_ms=settings.auth_failures_window_ms,
        max_keys=settings.auth_throttle_max_keys,
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
