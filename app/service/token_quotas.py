"""Per-user token quotas (app/domain/token_quota.py), enforced exactly across replicas.

Counting needs this replica's cache to hold every token a quota's guard znode has counted
(app/storage/zk/znodes/kts.py): each create charged to a quota moves its guard's version on, in the token's own
transaction. So a create reads the guards' versions; when one differs from the version this replica last
knew its cache to match, another replica created meanwhile, and the cache first takes in every change
notified so far (the notifications of those creates were committed with them). Then it counts, judges, and
commits guarded by the versions it counted at: a create elsewhere in between makes the commit fail, and the
whole round runs again. Creates on one replica charged to the same quota take turns, so that they do not
make each other retry.

A token deleted elsewhere (expired, swept) does not move a guard: a count may still include it, which
errs on the side of refusing; a refusal is therefore judged once more after catching up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack

from app.domain import token_quota
from app.domain.authorization import Authorizer
from app.domain.clock import Clock
from app.domain.errors import TokenQuotaExceeded
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, TokenQuota
from app.service.ports import StoredToken, TokenView

# What writes the token: ``store.create`` with the quotas it is charged to and the judge of their versions.
Write = Callable[[Sequence[QuotaKey], Callable[[Mapping[QuotaKey, int]], None]], StoredToken]


class TokenQuotas:
    def __init__(self, quota: TokenQuota, view: TokenView, *, clock: Clock, authorizer: Authorizer) -> None:
        self._quota = quota
        self._view = view
        self._clock = clock
        self._authorizer = authorizer
        self._known: dict[QuotaKey, int] = {}  # guard versions this replica's cache is known to match
        self._turns: dict[QuotaKey, threading.Lock] = {}
        self._turns_lock = threading.Lock()

    def keys(self, token: TokenInformation) -> list[QuotaKey]:
        return self._quota.keys(token, requester_is_super_user=self._authorizer.is_super_user(token.token_requester))

    def checked(self, token: TokenInformation) -> TokenInformation:
        """``token`` after a first judgement from the cache, before anything is written (a refusal here is
        audited as the create's refusal; the exact judgement is made again as the token is written)."""
        keys = self.keys(token)
        if keys:
            self._judge(keys)
        return token

    def create(self, token: TokenInformation, write: Write) -> StoredToken:
        """Write ``token`` within its quotas, and install it in the cache."""
        keys = self.keys(token)
        if not keys:
            stored = write((), _admit_all)
            self._view.apply(stored)
            return stored
        counted: dict[QuotaKey, int] = {}

        def admit(versions: Mapping[QuotaKey, int]) -> None:
            if any(self._known.get(key) != version for key, version in versions.items()):
                self._view.catch_up()
            counted.clear()
            counted.update(versions)
            self._judge(keys)

        with ExitStack() as turns:
            for key in sorted(keys, key=lambda key: (key.kind, str(key.principal))):  # one order: no deadlock
                turns.enter_context(self._turn(key))
            stored = write(keys, admit)
            self._view.apply(stored)  # before the guard's new version is known to be matched
            for key, version in counted.items():
                self._known[key] = version + 1
        return stored

    def _judge(self, keys: Sequence[QuotaKey]) -> None:
        try:
            token_quota.ensure_within(self._quota, self._counts(keys))
        except TokenQuotaExceeded:  # perhaps counting tokens deleted elsewhere a moment ago
            self._view.catch_up()
            token_quota.ensure_within(self._quota, self._counts(keys))

    def _counts(self, keys: Sequence[QuotaKey]) -> dict[QuotaKey, int]:
        now_ms = self._clock.now_ms()
        return {key: self._view.live_count(key, now_ms) for key in keys}

    def _turn(self, key: QuotaKey) -> threading.Lock:
        with self._turns_lock:
            return self._turns.setdefault(key, threading.Lock())


def _admit_all(_: Mapping[QuotaKey, int]) -> None:
    pass
