"""Token use cases: gather state, let ``app/domain/token_rules`` decide, then write through the store."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from app.domain import token_rules
from app.domain.authorization import Authorizer, Caller
from app.domain.clock import Clock
from app.domain.errors import ConcurrentModification, TokenNotFound
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_rules import CreateRequest, DeleteToken, Page, TokenPolicy
from app.domain.token_secret import TokenSecret, new_token_id
from app.service.hmac_index import HmacIndex
from app.service.ports import StoredToken, TokenStore

# A renew and an expire of one token racing on two replicas: the loser re-reads and decides again.
MAX_CAS_ATTEMPTS = 8
CAS_BACKOFF_S = 0.005
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: TokenInformation
    hmac: bytes


@dataclass(frozen=True, slots=True)
class ExpiryChange:
    token_id: str
    expiry_timestamp: int


class TokenService:
    def __init__(
        self,
        store: TokenStore,
        *,
        secret: TokenSecret,
        policy: TokenPolicy,
        authorizer: Authorizer,
        clock: Clock,
    ) -> None:
        self._store = store
        self._secret = secret
        self._policy = policy
        self._authorizer = authorizer
        self._clock = clock
        self._hmac_index = HmacIndex(secret)

    def create(self, caller: Caller, request: CreateRequest) -> IssuedToken:
        token = token_rules.plan_create(
            caller,
            request,
            token_id=new_token_id(),
            now_ms=self._clock.now_ms(),
            policy=self._policy,
            authorizer=self._authorizer,
        )
        self._store.create(token)
        return IssuedToken(token, self._secret.hmac(token.token_id))

    def renew(self, caller: Caller, token_id: str, renew_period_ms: int) -> ExpiryChange:
        token_rules.ensure_may_request_tokens(caller)
        self._ensure_visible(caller, token_id)
        return self._renew(caller, token_id, renew_period_ms)

    def renew_by_hmac(self, caller: Caller, mac: bytes, renew_period_ms: int) -> ExpiryChange:
        token_rules.ensure_may_request_tokens(caller)
        return self._renew(caller, self._token_id_for(mac), renew_period_ms)

    def expire(self, caller: Caller, token_id: str, expiry_period_ms: int) -> ExpiryChange:
        token_rules.ensure_may_request_tokens(caller)
        self._ensure_visible(caller, token_id)
        return self._expire(caller, token_id, expiry_period_ms)

    def expire_by_hmac(self, caller: Caller, mac: bytes, expiry_period_ms: int) -> ExpiryChange:
        token_rules.ensure_may_request_tokens(caller)
        return self._expire(caller, self._token_id_for(mac), expiry_period_ms)

    def describe(
        self,
        caller: Caller,
        owners: Sequence[KafkaPrincipal] | None,
        *,
        limit: int,
        after: str | None,
    ) -> Page:
        tokens = (stored.token for stored in self._store.list())
        visible = token_rules.describe(tokens, caller, owners, self._authorizer)
        return token_rules.paginate(visible, limit=limit, after=after)

    def get(self, caller: Caller, token_id: str) -> TokenInformation:
        """The token, or TokenNotFound when it is absent or the caller may not see it (no existence leak)."""
        return self._ensure_visible(caller, token_id).token

    def verify(self, token_id: str, mac: bytes) -> TokenInformation | None:
        """The token when ``mac`` is its HMAC and it has not expired; otherwise None."""
        stored = self._store.get(token_id)
        if stored is None or not self._secret.matches(token_id, mac):
            return None
        token = stored.token
        return token if token.authenticates_at(self._clock.now_ms()) else None

    def _token_id_for(self, mac: bytes) -> str:
        token_id = self._hmac_index.find(mac, self._store.list_ids)
        if token_id is None or not self._secret.matches(token_id, mac):
            raise TokenNotFound("No token has this HMAC.")
        return token_id

    def _ensure_visible(self, caller: Caller, token_id: str) -> StoredToken:
        stored = self._store.get(token_id)
        if stored is None or not token_rules.may_describe(stored.token, caller, self._authorizer):
            raise TokenNotFound(f"Token {token_id} does not exist or is not visible to {caller.principal}.")
        return stored

    def _renew(self, caller: Caller, token_id: str, renew_period_ms: int) -> ExpiryChange:
        def attempt(stored: StoredToken) -> ExpiryChange:
            expiry = token_rules.plan_renew(
                stored.token,
                caller,
                renew_period_ms=renew_period_ms,
                now_ms=self._clock.now_ms(),
                policy=self._policy,
                authorizer=self._authorizer,
            )
            self._store.update(stored.token.with_expiry(expiry), stored.version)
            return ExpiryChange(token_id, expiry)

        return self._with_cas(token_id, attempt)

    def _expire(self, caller: Caller, token_id: str, expiry_period_ms: int) -> ExpiryChange:
        def attempt(stored: StoredToken) -> ExpiryChange:
            decision = token_rules.plan_expire(
                stored.token,
                caller,
                expiry_period_ms=expiry_period_ms,
                now_ms=self._clock.now_ms(),
                authorizer=self._authorizer,
            )
            if isinstance(decision, DeleteToken):
                self._store.delete(token_id, stored.version)
            else:
                self._store.update(stored.token.with_expiry(decision.expiry_timestamp), stored.version)
            return ExpiryChange(token_id, decision.expiry_timestamp)

        return self._with_cas(token_id, attempt)

    def _with_cas(self, token_id: str, attempt: Callable[[StoredToken], T]) -> T:
        """Read, decide, write guarded by the version read; on a lost race read and decide again."""
        for attempt_number in range(MAX_CAS_ATTEMPTS):
            if attempt_number:
                # Jittered backoff so racing replicas stop colliding in lockstep.
                time.sleep(random.uniform(0, CAS_BACKOFF_S * attempt_number))  # noqa: S311 - not security
            stored = self._store.get(token_id)
            if stored is None:
                raise TokenNotFound(f"Token {token_id} does not exist.")
            try:
                return attempt(stored)
            except ConcurrentModification:
                continue
        raise ConcurrentModification(f"Token {token_id} kept changing under concurrent requests; retry.")
