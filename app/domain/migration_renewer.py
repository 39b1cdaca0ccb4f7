"""Keeping kts a renewer of the tokens made in ZooKeeper mode, so that after a migration to KRaft kts on
``bootstrap.servers`` can still renew and expire them: through the Kafka protocol only a token's owner and renewers
may (docs/kafka-compatibility.md), and kts logs in there as the principal of ``admin.sasl.jaas.config``.

``kts cluster prepare-migration`` adds that principal to the renewers of every live token lacking it; ``kts cluster
status`` counts the live tokens kts could not renew after the switch. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation


def lacking(tokens: Iterable[TokenInformation], principal: KafkaPrincipal, now_ms: int) -> list[TokenInformation]:
    """The live tokens ``principal`` could not renew: expired ones are left to the sweep, not prepared."""
    return [token for token in tokens if not token.is_expired(now_ms) and not token.owner_or_renewer(principal)]


def with_renewer(token: TokenInformation, principal: KafkaPrincipal) -> TokenInformation:
    """``token`` with ``principal`` among its renewers (after those it has, once): nothing else changes."""
    if principal in token.renewers:
        return token
    return replace(token, renewers=(*token.renewers, principal))
