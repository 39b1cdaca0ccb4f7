"""The composition root: builds every adapter and use case from settings. Nothing here runs at import."""

from __future__ import annotations

from dataclasses import dataclass

from app.auth.authenticator import Authenticator
from app.auth.basic import BasicAuthenticator
from app.auth.ssl_principal_mapper import SslPrincipalMapper
from app.domain.acl import AclAuthorizer
from app.domain.clock import Clock, SystemClock
from app.domain.token_rules import TokenPolicy
from app.domain.token_secret import TokenSecret
from app.service.acls import AclService
from app.service.tokens import TokenService
from app.service.users import UserCredentialService
from app.settings import Settings
from app.storage.zk.acl_cache import AclCache
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.user_store import ZkUserStore


@dataclass
class Runtime:
    settings: Settings
    zk: ZkConnection
    tokens: TokenService
    users: UserCredentialService
    acls: AclService
    acl_cache: AclCache
    authenticator: Authenticator

    def start(self) -> None:
        self.zk.start()
        self.acl_cache.start()

    def stop(self) -> None:
        self.acl_cache.stop()
        self.zk.stop()


def build_runtime(settings: Settings, clock: Clock | None = None) -> Runtime:
    clock = clock or SystemClock()
    zk = ZkConnection(settings.zookeeper_connect, session_timeout_ms=settings.zookeeper_session_timeout_ms)
    acl_store = ZkAclStore(zk)
    acl_cache = AclCache(zk, acl_store)
    authorizer = AclAuthorizer(
        settings.super_user_principals,
        acl_cache.snapshot,
        allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
    )
    user_store = ZkUserStore(zk)
    tokens = TokenService(
        ZkTokenStore(zk, znode_version=settings.token_znode_version),
        secret=TokenSecret(settings.secret_key),
        policy=TokenPolicy(
            max_lifetime_ms=settings.delegation_token_max_lifetime_ms,
            default_renew_ms=settings.delegation_token_expiry_time_ms,
        ),
        authorizer=authorizer,
        clock=clock,
    )
    return Runtime(
        settings=settings,
        zk=zk,
        tokens=tokens,
        users=UserCredentialService(user_store, authorizer=authorizer),
        acls=AclService(acl_store, acl_cache, authorizer=authorizer),
        acl_cache=acl_cache,
        authenticator=Authenticator(
            BasicAuthenticator(user_store, clock),
            tokens,
            client_auth=settings.ssl_client_auth,
            mapper=SslPrincipalMapper.from_rules(settings.ssl_principal_mapping_rules),
        ),
    )
