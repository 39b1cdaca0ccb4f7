"""kts's own identity toward the Kafka cluster, which no HTTP caller may ever hold.

Through the Kafka protocol kts acts on the cluster as its ``admin.sasl.jaas.config`` user (or whatever principal
the brokers map its certificate to), and names that principal a renewer of every token it creates: a caller who
logged in to kts under that name could renew and expire every one of them. With ZooKeeper, kts's SASL login to
ZooKeeper is the identity it holds toward the cluster. So a Basic login, a JWT, a delegation token or a client
certificate that comes out as one of these principals is refused (401, audited with the reason), whatever its
credentials; a Basic login before its password is checked, so that kts never tells whether a guess of its own
cluster password was right.

``SharedIdentity`` reads what makes such a login possible (the principal among ``super.users``, a SCRAM user of
that name), for the one warning ``kts serve`` logs at start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from app.domain.credentials import Mechanism
from app.domain.errors import KtsError, NotAuthenticated
from app.domain.principal import KafkaPrincipal

log = logging.getLogger(__name__)


class OwnIdentity:
    """The principals kts itself is to the cluster: those its configuration names, and the one the cluster
    answered once connected (``learned``: None until then)."""

    def __init__(
        self,
        configured: Iterable[KafkaPrincipal] = (),
        learned: Callable[[], KafkaPrincipal | None] = lambda: None,
        *,
        source: str = "kts's login to the cluster",
    ) -> None:
        self._configured = frozenset(configured)
        self._learned = learned
        self.source = source  # where the principal comes from, for messages (never a password)

    def principals(self) -> frozenset[KafkaPrincipal]:
        learned = self._learned()
        return self._configured if learned is None else self._configured | {learned}

    def is_own(self, principal: KafkaPrincipal) -> bool:
        return principal in self.principals()

    def refuse(self, principal: KafkaPrincipal) -> None:
        """Raise NotAuthenticated when ``principal`` is kts's own."""
        if self.is_own(principal):
            raise NotAuthenticated(
                f"{principal} is the principal kts itself uses toward the Kafka cluster ({self.source}); "
                "no HTTP caller may authenticate as it."
            )


class ScramUsers(Protocol):
    def mechanisms(self, user_name: str) -> Mapping[Mechanism, int]: ...


def shared_identity_warnings(
    identity: OwnIdentity,
    super_users: Iterable[KafkaPrincipal],
    users: ScramUsers,
    *,
    own_scram_login: str | None = None,
) -> list[str]:
    """One line per way a caller could present kts's principal: it is among ``super.users``, or a SCRAM user of its
    name exists on the cluster (other than the credential kts itself logs in with, ``own_scram_login``)."""
    warnings = []
    supers = set(super_users)
    for principal in sorted(identity.principals(), key=str):
        reasons = []
        if principal in supers:
            reasons.append("super.users names it")
        if principal.is_user and principal.name != own_scram_login:
            try:
                if users.mechanisms(principal.name):
                    reasons.append("a SCRAM user of that name exists on the cluster")
            except KtsError as exc:
                log.debug("cannot tell whether SCRAM user %s exists: %s", principal.name, exc.message)
        if reasons:
            warnings.append(
                f"{principal} is kts's own principal toward the Kafka cluster ({identity.source}), and "
                f"{' and '.join(reasons)}: kts refuses every HTTP login as it, so whoever uses that login gets 401; "
                "give kts a principal of its own (docs/deployment.md)"
            )
    return warnings
