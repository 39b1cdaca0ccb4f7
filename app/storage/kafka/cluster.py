"""kts's session with a cluster reached through the Kafka protocol, and the checks made before serving:
the brokers answer, accept kts's login, speak the token RPCs kts sends, have tokens turned on in their metadata,
and derive HMACs with kts's ``delegation.token.secret.key``. Each failure is one line naming its cause
(StoreUnavailable, or SecretKeyMismatch for another secret), as the ZooKeeper checks are.

The secret is checked the only way the protocol allows: kts mints a short-lived token for itself, compares the
HMAC the controller answers with the one it computes, and expires the token at once. The same answer tells who
kts is to the cluster (the token's owner): the principal kts adds to the renewers of every token it creates.
"""

from __future__ import annotations

import hmac
import logging

from app.domain.cluster_facts import ClusterFacts
from app.domain.errors import KtsError, StoreUnavailable, TokenNotFound
from app.domain.own_grants import NEEDED, missing_grants, missing_grants_message
from app.domain.principal import KafkaPrincipal
from app.domain.secret_fingerprint import SecretKeyMismatch
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.storage.kafka.acls import KafkaAcls
from app.storage.kafka.client_config import KafkaClientSecurity
from app.storage.kafka.errors import ClusterRefused
from app.storage.kafka.token_rpc import TokenRpc, missing_versions
from app.storage.kafka.wire import KafkaWire

log = logging.getLogger(__name__)
PROBE_LIFETIME_MS = 60_000


class KafkaCluster:
    def __init__(self, bootstrap_servers: str, security: KafkaClientSecurity, *, request_timeout_ms: int) -> None:
        self.servers = bootstrap_servers
        self.wire = KafkaWire(bootstrap_servers, security, request_timeout_ms=request_timeout_ms)
        self.tokens = TokenRpc(self.wire)
        self._principal: KafkaPrincipal | None = None

    @property
    def principal(self) -> KafkaPrincipal:
        """Who kts is to the cluster (known once started)."""
        if self._principal is None:
            raise StoreUnavailable("kts is not connected to the Kafka brokers.")
        return self._principal

    @property
    def known_principal(self) -> KafkaPrincipal | None:
        """Who kts is to the cluster, or None before the first start."""
        return self._principal

    @property
    def connected(self) -> bool:
        return self.wire.connected

    @property
    def state(self) -> str:
        return "connected" if self.wire.connected else "lost"

    def start(self, secret: TokenSecret) -> None:
        self.wire.start()
        try:
            missing = missing_versions(self.wire.api_versions())
            if missing:
                raise StoreUnavailable(
                    f"the brokers at {self.servers} do not answer {', '.join(missing)}: kts needs Kafka 3.3 or later"
                )
            self._principal = self._check_secret(secret)
            self._check_grants(self._principal)
        except SecretKeyMismatch:
            self.wire.stop()
            raise
        except KtsError as exc:
            self.wire.stop()
            if isinstance(exc, StoreUnavailable):
                raise
            # Any other refusal at start (TokenAuthorizationFailed, ...) is one line too, never a traceback.
            raise StoreUnavailable(f"the cluster at {self.servers} refused kts's start: {exc}") from None
        log.info("connected to the Kafka cluster at %s as %s", self.servers, self._principal)

    def stop(self) -> None:
        self.wire.stop()

    def facts(self) -> ClusterFacts:
        """What the cluster is, as the brokers answer now (``kts cluster status``): StoreUnavailable when they do
        not. A cluster with a finalized ``metadata.version`` runs KRaft; without one, ZooKeeper mode."""
        described = self.wire.describe()
        level = described.features.get("metadata.version")
        return ClusterFacts(
            mode="kraft" if level is not None else "zookeeper",
            cluster_id=described.cluster_id,
            nodes=described.brokers,
            metadata_version=None if level is None else f"feature level {level}",
            principal=None if self._principal is None else str(self._principal),
            secret_check="matches the cluster's (a token kts minted at start had the HMAC kts computes)"
            if self._principal is not None
            else "not checked yet",
        )

    def list_tokens(self) -> list[TokenInformation]:
        """Every token kts's principal may see, as the cluster records it (``ClusterTokens`` of the audit
        reconciler, app/storage/kafka/cluster_audit.py: the requester of kts's tokens is kts)."""
        return [found.token for found in self.tokens.describe()]

    def _check_grants(self, principal: KafkaPrincipal) -> None:
        """The preflight of kts's own grants (app/domain/own_grants.py): StoreUnavailable naming every one missing,
        with the ``kafka-acls.sh`` commands that grant them, rather than a refusal on the first request."""
        try:
            acls = KafkaAcls(self.wire).describe()
        except ClusterRefused:
            raise StoreUnavailable(
                missing_grants_message(list(NEEDED), str(principal), self.servers, unread=True)
            ) from None
        missing = missing_grants(acls, str(principal))
        if missing:
            raise StoreUnavailable(missing_grants_message(missing, str(principal), self.servers))

    def _check_secret(self, secret: TokenSecret) -> KafkaPrincipal:
        probe = self.tokens.create_for_self(PROBE_LIFETIME_MS, cluster=self.servers)
        try:
            if not hmac.compare_digest(probe.hmac, secret.hmac(probe.token.token_id)):
                raise SecretKeyMismatch(
                    f"delegation.token.secret.key: not the secret of the cluster at {self.servers} (the HMAC its "
                    "controller answered for a token kts minted differs from kts's)"
                )
        finally:
            try:
                self.tokens.expire(probe.hmac, -1, probe.token.token_id)
            except TokenNotFound:  # not yet found by HMAC on a loaded controller: it lapses by itself
                log.info("kts's start-up token %s lapses in %d s", probe.token.token_id, PROBE_LIFETIME_MS // 1000)
        return probe.token.owner
