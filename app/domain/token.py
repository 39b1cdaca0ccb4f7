"""A delegation token's information, as Kafka's ``TokenInformation`` holds it (the HMAC is not part of it)."""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.principal import KafkaPrincipal


@dataclass(frozen=True, slots=True)
class TokenInformation:
    token_id: str
    owner: KafkaPrincipal
    token_requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int

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
