"""Each principal's fair share of the token lists (app/domain/token_share.py), held exactly across replicas.

**Where the figures come from.** A principal's tokens are counted in this replica's cache (tokens per
requester, expired ones included: what ZooKeeper holds until the sweep). The notifications its writes caused
cannot be read back from ZooKeeper (a notification names a token, not who wrote it), so each principal held to
a share has a ledger znode, ``/kts/token-shares/<principal>``, holding its notifications per minute. Every write
charged to it sets the ledger, guarded by the version read, **in the transaction that makes the write**: the
token write and its charge happen together or not at all, and two replicas cannot both take the last of a
share, since the second's compare-and-set fails and it judges again. That is the quota guards' way
(app/service/token_quotas.py), which also makes the token count exact: when the ledger's version is not the
one this replica last knew its cache to match, another replica wrote for the principal meanwhile, and the
cache first takes in every change notified so far.

**Who is charged what.** A create, renew or expire that keeps the token is judged and charged to the caller
(one notification; a create also adds a token, counted by the cache). A deletion (an expire that deletes, a
revocation, the sweep) is never refused: it is charged to the token's requester, because the notification it
writes is the one that token was holding room for, and it stays 15 minutes more. The sweep and bulk revocation
charge a batch's requesters in the batch's own transaction (one ledger write per requester; a batch names few,
app/domain/token_share.py ``deletion_batches``), so a token is never counted twice, as a token and as its
deletion's notification, nor left uncounted.

**What is not counted.** Tokens and notifications that brokers write themselves (clients creating, renewing or
expiring through a broker, brokers sweeping in ZooKeeper mode) are outside every share: kts cannot refuse them,
and the cluster-wide guard still counts them. Super users have no share.

Precision: a write checks first from the ledger as this replica last saw it (a refusal there costs no
ZooKeeper write); the exact judgement is made on the ledger read in the write's own round trip. Replicas age
the per-minute counts on their own clocks: clocks apart by ``d`` make a notification count up to ``d`` less on
one of them (operators keep replicas on NTP, as brokers).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from cachetools import LRUCache, TTLCache

from app.domain import token_share
from app.domain.authorization import Authorizer
from app.domain.clock import Clock
from app.domain.errors import TokenWriteShareExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_share import SharePolicy, ShareWrite
from app.service.admission import WriteCharge
from app.service.ports import TokenView
from app.storage.zk.share_ledgers import LedgerState

log = logging.getLogger(__name__)
REMEMBERED = 100_000  # principals whose last seen ledger this replica keeps for its first judgement
LOG_EVERY_S = 10.0


class _Charge:
    """One charge (the ``ShareCharge`` port): a judged write, or ``deletions`` never refused. ``decide`` may run
    once per attempt of the write; what the last one decided is what was written if the write succeeded."""

    def __init__(
        self, shares: TokenShares, principal: KafkaPrincipal, write: ShareWrite | None, *, deletions: int = 0
    ) -> None:
        self._shares = shares
        self._principal = principal
        self._write = write  # None: deletions
        self._deletions = deletions
        self.decided: tuple[LedgerState, token_share.ShareLedger] | None = None

    @property
    def principal(self) -> KafkaPrincipal:
        return self._principal

    def decide(self, state: LedgerState) -> token_share.ShareLedger:
        if self._write is None:
            new = state.ledger.charged(self._deletions, self._shares.now_ms())
        else:
            new = self._shares._judged_ledger(self._principal, self._write, state)
        self.decided = (state, new)
        return new


class TokenShares:
    def __init__(
        self,
        policy: SharePolicy,
        view: TokenView,
        *,
        clock: Clock,
        authorizer: Authorizer,
    ) -> None:
        self.policy = policy
        self._view = view
        self._clock = clock
        self._authorizer = authorizer
        self._lock = threading.Lock()
        self._known: dict[KafkaPrincipal, int] = {}  # ledger versions this replica's cache is known to match
        self._seen: LRUCache[KafkaPrincipal, token_share.ShareLedger] = LRUCache(REMEMBERED)
        self._turns: defaultdict[KafkaPrincipal, threading.Lock] = defaultdict(threading.Lock)
        self._logged: TTLCache[KafkaPrincipal, bool] = TTLCache(maxsize=10_000, ttl=LOG_EVERY_S)

    def holds(self, principal: KafkaPrincipal) -> bool:
        """Whether ``principal`` is held to a share (shares are on and it is not a super user)."""
        return self.policy.enabled and not self._authorizer.is_super_user(principal)

    def check(self, principal: KafkaPrincipal, write: ShareWrite) -> None:
        """The first judgement, before anything is written, from the ledger as this replica last saw it (older
        than ZooKeeper's, so it never counts more than there is: a refusal here stands)."""
        if not self.holds(principal):
            return
        with self._lock:
            ledger = self._seen.get(principal, token_share.ShareLedger())
        self._judge(principal, ledger, write)

    def judged(self, principal: KafkaPrincipal, write: ShareWrite) -> _Charge | None:
        """The charge of a write by ``principal``, judged exactly as it is written (None: it has no share)."""
        return _Charge(self, principal, write) if self.holds(principal) else None

    def deletion(self, token: TokenInformation) -> _Charge | None:
        """The charge of deleting ``token``: never refused, to its requester (None: it has no share)."""
        requester = token.token_requester
        return _Charge(self, requester, None, deletions=1) if self.holds(requester) else None

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def settle(self, charge: WriteCharge | None) -> None:
        """After the write that carried ``charge`` (one of this service's) succeeded: remember what it wrote."""
        if not isinstance(charge, _Charge) or charge.decided is None:
            return
        state, ledger = charge.decided
        with self._lock:
            self._known[charge.principal] = state.version + 1  # the version this write gave it
            self._seen[charge.principal] = ledger

    @contextmanager
    def turn(self, principal: KafkaPrincipal) -> Iterator[None]:
        """Writes charged to one principal on this replica take turns, so that they do not make each other's
        compare-and-set fail."""
        if not self.holds(principal):
            yield
            return
        with self._lock:
            turn = self._turns[principal]
        with turn:
            yield

    def deletion_charges(self, tokens: Iterable[TokenInformation]) -> list[WriteCharge]:
        """The charges of deleting ``tokens`` at once (a sweep's or a revocation's batch): one per requester
        held to a share, never refused. Settle each once the batch is deleted."""
        counts: dict[KafkaPrincipal, int] = {}
        for token in tokens:
            if self.holds(token.token_requester):
                counts[token.token_requester] = counts.get(token.token_requester, 0) + 1
        return [_Charge(self, principal, None, deletions=count) for principal, count in sorted(counts.items(), key=str)]

    def _judged_ledger(
        self, principal: KafkaPrincipal, write: ShareWrite, state: LedgerState
    ) -> token_share.ShareLedger:
        """The ledger after a write judged on ``state`` (raises TokenWriteShareExceeded to refuse it)."""
        with self._lock:
            known = self._known.get(principal)
            self._seen[principal] = state.ledger
        caught_up = known != state.version
        if caught_up:
            self._view.catch_up()  # another replica wrote for this principal: count its tokens too
        try:
            self._judge(principal, state.ledger, write)
        except TokenWriteShareExceeded:
            if caught_up:
                raise
            self._view.catch_up()  # perhaps counting tokens swept on another replica a moment ago
            self._judge(principal, state.ledger, write)
        return state.ledger.charged(1, self._clock.now_ms())

    def _judge(self, principal: KafkaPrincipal, ledger: token_share.ShareLedger, write: ShareWrite) -> None:
        tokens = self._view.requested_count(principal)
        try:
            token_share.ensure_within(self.policy, principal, tokens, ledger, write, self._clock.now_ms())
        except TokenWriteShareExceeded as exc:
            self._log(principal, exc)
            raise

    def _log(self, principal: KafkaPrincipal, refusal: TokenWriteShareExceeded) -> None:
        with self._lock:
            if principal in self._logged:
                return
            self._logged[principal] = True
        log.warning("refusing token writes: %s", refusal.message)  # once per principal per 10 s in a flood
