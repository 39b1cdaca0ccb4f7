"""The four delegation-token RPCs (Kafka API keys 38 to 41), as kio's message classes encode them: Create v3
(with the owner, KIP-373), Renew v2, Expire v2, Describe v3. The cluster picks token ids and times; answers
carry the HMAC, which stays inside this adapter (kts recomputes it from its own secret)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, TypeVar

from kio.schema.create_delegation_token.v3.request import CreatableRenewers, CreateDelegationTokenRequest
from kio.schema.create_delegation_token.v3.response import CreateDelegationTokenResponse
from kio.schema.describe_delegation_token.v3.request import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from kio.schema.describe_delegation_token.v3.response import DescribeDelegationTokenResponse
from kio.schema.expire_delegation_token.v2.request import ExpireDelegationTokenRequest
from kio.schema.expire_delegation_token.v2.response import ExpireDelegationTokenResponse
from kio.schema.renew_delegation_token.v2.request import RenewDelegationTokenRequest
from kio.schema.renew_delegation_token.v2.response import RenewDelegationTokenResponse
from kio.static.primitive import i64Timedelta

from app.domain.errors import StoreUnavailable
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.storage.kafka.errors import check
from app.storage.kafka.wire import KafkaWire, TokenAnswer

A = TypeVar("A")

# API key: the version kts sends. Create v3 and Describe v3 carry owner and requester (Kafka 3.3 and later).
VERSIONS: Final = {38: 3, 39: 2, 40: 2, 41: 3}
UNSUPPORTED_VERSION: Final = 35
TOKEN_NOT_FOUND: Final = 62
NOT_FOUND_PATIENCE_S: Final = 3.2
TOKEN_AUTH_DISABLED: Final = 61
TOKEN_REQUEST_NOT_ALLOWED: Final = 64
NAMES: Final = {
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    41: "DescribeDelegationToken",
}


@dataclass(frozen=True, slots=True)
class ClusterToken:
    """A token as the cluster answers it, its HMAC included (never logged: see ``__repr__``)."""

    token: TokenInformation
    hmac: bytes

    def __repr__(self) -> str:
        return f"ClusterToken({self.token.token_id}, owner={self.token.owner})"


def missing_versions(api_versions: dict[int, tuple[int, int]]) -> list[str]:
    """The token RPCs the brokers do not answer at the version kts sends (empty: all there)."""
    return [
        f"{NAMES[key]} v{version}"
        for key, version in VERSIONS.items()
        if not (key in api_versions and api_versions[key][0] <= version <= api_versions[key][1])
    ]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _period(ms: int) -> i64Timedelta:
    return i64Timedelta.parse(timedelta(milliseconds=ms))


class TokenRpc:
    def __init__(self, wire: KafkaWire) -> None:
        self._wire = wire

    def create(self, owner: KafkaPrincipal, renewers: tuple[KafkaPrincipal, ...], max_lifetime_ms: int) -> ClusterToken:
        request = CreateDelegationTokenRequest(
            owner_principal_type=owner.principal_type,
            owner_principal_name=owner.name,
            renewers=tuple(CreatableRenewers(principal_type=r.principal_type, principal_name=r.name) for r in renewers),
            max_lifetime=_period(max_lifetime_ms),
        )
        answer = self._wire.token_request(request, CreateDelegationTokenResponse)
        check(answer.error_code, f"Create a token for {owner}")
        found = answer.message
        assert found is not None
        token = TokenInformation(
            token_id=found.token_id,
            owner=KafkaPrincipal(found.principal_type, found.principal_name),
            token_requester=KafkaPrincipal(found.token_requester_principal_type, found.token_requester_principal_name),
            renewers=renewers,
            issue_timestamp=_ms(found.issue_timestamp),
            expiry_timestamp=_ms(found.expiry_timestamp),
            max_timestamp=_ms(found.max_timestamp),
        )
        return ClusterToken(token, bytes(found.hmac))

    def create_for_self(self, max_lifetime_ms: int, *, cluster: str) -> ClusterToken:
        """A token owned by kts's own principal (the start-up probe), refusals worded for the start-up line."""
        request = CreateDelegationTokenRequest(
            owner_principal_type=None, owner_principal_name=None, renewers=(), max_lifetime=_period(max_lifetime_ms)
        )
        answer = self._wire.token_request(request, CreateDelegationTokenResponse)
        if answer.error_code == UNSUPPORTED_VERSION:
            raise StoreUnavailable(
                f"the cluster at {cluster} has no delegation tokens in its metadata version (a KRaft cluster needs "
                "metadata.version 3.6-IV2 or later: kafka-features.sh upgrade)"
            )
        if answer.error_code == TOKEN_AUTH_DISABLED:
            raise StoreUnavailable(
                f"the cluster at {cluster} has delegation tokens turned off (set delegation.token.secret.key on its "
                "brokers and controllers)"
            )
        if answer.error_code == TOKEN_REQUEST_NOT_ALLOWED:
            raise StoreUnavailable(
                f"the brokers at {cluster} refuse token requests from kts's login (use a SASL or SSL listener with "
                "admin.security.protocol, and not a token login)"
            )
        check(answer.error_code, f"the cluster at {cluster} refused kts's start-up token")
        found = answer.message
        assert found is not None
        owner = KafkaPrincipal(found.principal_type, found.principal_name)
        token = TokenInformation(
            found.token_id,
            owner,
            owner,
            (),
            _ms(found.issue_timestamp),
            _ms(found.expiry_timestamp),
            _ms(found.max_timestamp),
        )
        return ClusterToken(token, bytes(found.hmac))

    def renew(self, mac: bytes, period_ms: int, token_id: str) -> int:
        """The new expiry timestamp the cluster answers."""
        answer = self._settled(
            lambda: self._wire.token_request(
                RenewDelegationTokenRequest(hmac=mac, renew_period=_period(period_ms)), RenewDelegationTokenResponse
            )
        )
        check(answer.error_code, f"Renew token {token_id}")
        assert answer.message is not None
        return _ms(answer.message.expiry_timestamp)

    def expire(self, mac: bytes, period_ms: int, token_id: str) -> int:
        """The new expiry timestamp the cluster answers (a negative period removes the token now)."""
        answer = self._settled(
            lambda: self._wire.token_request(
                ExpireDelegationTokenRequest(hmac=mac, expiry_time_period=_period(period_ms)),
                ExpireDelegationTokenResponse,
            )
        )
        check(answer.error_code, f"Expire token {token_id}")
        assert answer.message is not None
        return _ms(answer.message.expiry_timestamp)

    @staticmethod
    def _settled(ask: Callable[[], TokenAnswer[A]]) -> TokenAnswer[A]:
        """A renew or an expire, asked again while the answer is "not found" for a short while: the controller
        finds a token by its HMAC once it has applied the token's record, a moment after answering its create."""
        delay = 0.05
        deadline = time.monotonic() + NOT_FOUND_PATIENCE_S
        while True:
            answer = ask()
            if answer.error_code != TOKEN_NOT_FOUND or time.monotonic() + delay > deadline:
                return answer
            time.sleep(delay)
            delay *= 2

    def describe(self, owners: list[KafkaPrincipal] | None = None) -> list[ClusterToken]:
        """Every token kts's principal may see (its owner filter as Kafka's: None means all)."""
        request = DescribeDelegationTokenRequest(
            owners=None
            if owners is None
            else tuple(
                DescribeDelegationTokenOwner(principal_type=o.principal_type, principal_name=o.name) for o in owners
            )
        )
        answer = self._wire.token_request(request, DescribeDelegationTokenResponse)
        check(answer.error_code, "Describe tokens")
        assert answer.message is not None
        return [
            ClusterToken(
                TokenInformation(
                    token_id=found.token_id,
                    owner=KafkaPrincipal(found.principal_type, found.principal_name),
                    token_requester=KafkaPrincipal(
                        found.token_requester_principal_type or found.principal_type,
                        found.token_requester_principal_name or found.principal_name,
                    ),
                    renewers=tuple(KafkaPrincipal(r.principal_type, r.principal_name) for r in found.renewers),
                    issue_timestamp=int(found.issue_timestamp),
                    expiry_timestamp=int(found.expiry_timestamp),
                    max_timestamp=int(found.max_timestamp),
                ),
                bytes(found.hmac),
            )
            for found in answer.message.tokens
        ]
