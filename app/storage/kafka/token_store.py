"""Tokens written through the Kafka protocol: the controller makes each change, picks token ids and times, and
answers; kts asks as its own principal, which it adds to the renewers of every token it creates (on the
protocol only the owner and the renewers may renew or expire a token, super users included).

Renew and expire name a token by its HMAC, which kts computes from its secret. The state kts installs after a
write is what the controller answered (a KRaft controller never renews past ``delegation.token.expiry.time.ms``,
where ZooKeeper mode accepts any period up to the maximum). Reads come from the replica's cache
(token_cache.py): the controller itself settles races (a renew of a token expired meanwhile answers 62).

What ZooKeeper writes in one transaction with a change, the quota guard and the audit intent marker, lives here
in the ports ``QuotaGuard`` and ``IntentMarks`` (shared by replicas where they are shared). A create records the
token the cluster made with who asked and the create's pending event (``TokenRequesters.record``): that is its
intent mark, the one the audit reconciler settles a create by (app/storage/kafka/cluster_audit.py), and what the next
turn on its quota counts until a broker describes the token. Nothing is written with a change for the admission:
this backend's is ``OPEN_ADMISSION`` (app/service/admission.py), which charges nothing, since the controller guards
its own lists.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from app.domain.errors import KtsError, StoreUnavailable, TokenNotFound
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.admission import WriteCharge
from app.service.ports import (
    PLAIN_CREATE,
    CreateTerms,
    Expiry,
    Renewal,
    StoredToken,
    TokenChange,
)
from app.storage.kafka.cluster import KafkaCluster
from app.storage.kafka.ports import IntentMarks, QuotaGuard, TokenRequesters
from app.storage.kafka.token_cache import KafkaTokenCache

log = logging.getLogger(__name__)
R = TypeVar("R")


class KafkaTokenStore:
    def __init__(
        self,
        cluster: KafkaCluster,
        cache: KafkaTokenCache,
        secret: TokenSecret,
        *,
        quota_guard: QuotaGuard,
        intents: IntentMarks,
        requesters: TokenRequesters,
    ) -> None:
        self._cluster = cluster
        self._cache = cache
        self._secret = secret
        self._guard = quota_guard
        self._intents = intents
        self._requesters = requesters

    def next_token_id(self) -> None:
        """The controller picks the id."""
        return None

    def get(self, token_id: str) -> StoredToken | None:
        return self._cache.get(token_id)

    def get_many(
        self, token_ids: list[str], known: Mapping[str, StoredToken] | None = None
    ) -> dict[str, StoredToken | None]:
        return {token_id: self._cache.get(token_id) for token_id in token_ids}

    def create(self, token: TokenInformation, terms: CreateTerms = PLAIN_CREATE) -> StoredToken:
        intent, quotas, admit = terms.intent, terms.quotas, terms.admit  # no admission charge: nothing to guard
        kts = self._cluster.principal
        renewers = token.renewers if kts in token.renewers else (*token.renewers, kts)
        with self._guard.hold(quotas) as versions:
            if admit is not None:
                admit(versions)
            created = self._cluster.tokens.create(token.owner, renewers, token.max_timestamp - token.issue_timestamp)
            answered = created.token
            # Within the turn: the next turn, on any replica, counts this token by its record until a broker
            # describes it. A turn on a quota whose record is lost fails (it ends unsettled; see the guard).
            self._record(answered, token, intent, required=bool(quotas))
        # The requester is the caller kts acted for; the cluster recorded kts's own principal.
        return StoredToken(
            TokenInformation(
                answered.token_id,
                answered.owner,
                token.token_requester,
                renewers,
                answered.issue_timestamp,
                answered.expiry_timestamp,
                answered.max_timestamp,
            ),
            0,
        )

    def change(
        self, token_id: str, decide: Callable[[StoredToken], TokenChange[R]], intent: int | None = None
    ) -> tuple[StoredToken | None, R]:
        """Decide on the cached state, then ask the controller (which refuses what it must, whatever kts
        decided: a token expired or gone meanwhile)."""
        stored = self._cache.get(token_id)
        if stored is None:
            raise TokenNotFound(f"Token {token_id} does not exist.")
        change = decide(stored)
        mac = self._secret.hmac(token_id)
        rpc = self._cluster.tokens
        request = change.request
        if change.token is None or (isinstance(request, Expiry) and request.period_ms < 0):
            rpc.expire(mac, -1, token_id)
            self._mark(intent)
            return None, change.result
        if isinstance(request, Renewal):
            expiry = rpc.renew(mac, request.period_ms, token_id)
        else:
            expiry = rpc.expire(mac, request.period_ms, token_id)
        self._mark(intent)
        return StoredToken(stored.token.with_expiry(expiry), stored.version + 1), change.result

    def delete_many(self, deletions: list[tuple[str, int, int | None]], charges: Sequence[WriteCharge] = ()) -> None:
        """Expire each now. Not one transaction as in ZooKeeper: each expire stands alone, and a token already
        gone is skipped (what a revocation wants, it is). ``charges``: none, from this backend's admission."""
        rpc = self._cluster.tokens
        for token_id, _version, intent in deletions:
            try:
                rpc.expire(self._secret.hmac(token_id), -1, token_id)
            except TokenNotFound:
                log.info("token %s was already gone when kts expired it", token_id)
            self._mark(intent)

    def list(self) -> list[StoredToken]:
        return [StoredToken(found.token, 0) for found in self._cluster.tokens.describe()]

    def _record(
        self, answered: TokenInformation, asked: TokenInformation, intent: int | None, *, required: bool
    ) -> None:
        """Who asked for the token the cluster made. Best effort without quotas: the token is made, and the audit
        reconciler records it later; with quotas a failure raises StoreUnavailable (the request answers 503, the
        token exists and the reconciler settles its create event)."""
        try:
            self._requesters.record(
                answered.token_id,
                requester=str(asked.token_requester),
                owner=str(answered.owner),
                event_id=None if intent is None else intent,
                counts_until_ms=min(answered.expiry_timestamp, answered.max_timestamp),
            )
        except KtsError as exc:
            log.warning(
                "who asked for token %s not recorded (the audit reconciler will): %s", answered.token_id, exc.message
            )
            if required:
                raise StoreUnavailable(
                    "The token was created but its quota could not be recorded; the audit trail will show it."
                ) from exc

    def _mark(self, intent: int | None) -> None:
        if intent is not None:
            self._intents.mark(intent)
