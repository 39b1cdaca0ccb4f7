"""A delegation token's information, as Kafka's ``TokenInformation`` holds it (the HMAC is not part of it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain.principal import KafkaPrincipal


# init=False: the ``__init__`` below replaces the one a frozen dataclass generates, which sets each field with
# ``object.__setattr__`` by name: some 2 µs a token, a fifth of start-up's decoding of 100k tokens. Same arguments,
# same fields; the instances stay frozen (assigning a field still raises FrozenInstanceError).
@dataclass(frozen=True, slots=True, init=False)
class TokenInformation:
    token_id: str
    owner: KafkaPrincipal
    token_requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int

    def __init__(
        self,
        token_id: str,
        owner: KafkaPrincipal,
        token_requester: KafkaPrincipal,
        renewers: tuple[KafkaPrincipal, ...],
        issue_timestamp: int,
        expiry_timestamp: int,
        max_timestamp: int,
    ) -> None:
        # Each slot set through its own descriptor, as object.__setattr__ would after looking it up by name.
        _set_token_id(self, token_id)
        _set_owner(self, owner)
        _set_token_requester(self, token_requester)
        _set_renewers(self, renewers)
        _set_issue_timestamp(self, issue_timestamp)
        _set_expiry_timestamp(self, expiry_timestamp)
        _set_max_timestamp(self, max_timestamp)

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        return principal == self.owner or principal in self.renewers

    def is_expired(self, now_ms: int) -> bool:
        """Kafka's test on renew and expire: strictly past the expiry or the maximum."""
        return self.expiry_timestamp < now_ms or self.max_timestamp < now_ms

    def authenticates_at(self, now_ms: int) -> bool:
        """Stricter than Kafka, which lets a token log in until the sweep deletes it: from its expiry
        instant on, a token never authenticates."""
        return now_ms < self.expiry_timestamp and now_ms < self.max_timestamp

    def with_expiry(self, expiry_timestamp: int) -> TokenInformation:
        return TokenInformation(
            self.token_id,
            self.owner,
            self.token_requester,
            self.renewers,
            self.issue_timestamp,
            expiry_timestamp,
            self.max_timestamp,
        )

    @property
    def authenticated_principal(self) -> KafkaPrincipal:
        """Who a client logging in with this token is: ``User:<owner name>`` (Kafka drops the owner's type)."""
        return KafkaPrincipal.user(self.owner.name)


def _setter(name: str) -> Any:
    """The slot descriptor's ``__set__`` of a field, which a frozen dataclass's ``__setattr__`` does not go through."""
    return vars(TokenInformation)[name].__set__


_set_token_id = _setter("token_id")
_set_owner = _setter("owner")
_set_token_requester = _setter("token_requester")
_set_renewers = _setter("renewers")
_set_issue_timestamp = _setter("issue_timestamp")
_set_expiry_timestamp = _setter("expiry_timestamp")
_set_max_timestamp = _setter("max_timestamp")
