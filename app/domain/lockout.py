"""Per-account lockout shared by every replica, as HashiCorp Vault's user lockout: ``threshold`` failed
logins for one claimed user name, whatever the source address, lock that account for ``duration_ms``.

Counting is local, locking is shared. Each replica counts the failures of each account itself (a count
is reset by a success, and by a window without failures, as Vault's ``lockout_counter_reset``); when its
count reaches its share of the threshold, ``ceil(threshold / replicas)``, it locks the account at once
and asks for the lock to be published (the lock znode every replica watches). So the shared store is
written once per lock, never per attempt, and across ``n`` replicas at most ``n * ceil(threshold / n)``,
that is fewer than ``threshold + n``, guesses are checked before every replica refuses: each replica
checks at most its share, whether or not it has seen the others' locks yet. (Guesses already admitted
and being checked when the share is reached are checked too: the server's connection cap bounds those.)

A replica's own lock bridges the time until it sees the published one: once the published lock is seen
(or released by a super user), the published state alone decides.

The price: anyone who knows a user name can lock that user out, from any address. That is what makes the
account not guessable. Locks apply to every claimed name, existing or not, so a lock says nothing about
whether a user exists.

Everything reads time from the injected clock; state sits behind one lock, bounded by ``max_keys`` accounts
(least recently failed dropped first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from app.domain.clock import Clock


@dataclass(frozen=True, slots=True)
class LockoutPolicy:
    threshold: int = 10
    window_ms: int = 900_000
    duration_ms: int = 900_000
    max_keys: int = 100_000

    def __post_init__(self) -> None:
        if min(self.threshold, self.window_ms, self.duration_ms, self.max_keys) < 1:
            raise ValueError("a lockout needs a threshold, window, duration and key count of at least 1")

    def share(self, replicas: int) -> int:
        """The failures one of ``replicas`` replicas checks before it locks the account."""
        replicas = max(1, replicas)
        return -(-self.threshold // replicas)


@dataclass(frozen=True, slots=True)
class Lock:
    """``account`` is locked until ``until_ms``, after ``failures`` failures counted by this replica."""

    account: str
    locked_at_ms: int
    until_ms: int
    failures: int


class _Account:
    __slots__ = ("failures", "last_failure_ms", "locked_until_ms")

    def __init__(self) -> None:
        self.failures = 0
        self.last_failure_ms = 0
        self.locked_until_ms = 0


class AccountLockout:
    def __init__(self, policy: LockoutPolicy, clock: Clock) -> None:
        self._policy = policy
        self._clock = clock
        self._accounts: OrderedDict[str, _Account] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def policy(self) -> LockoutPolicy:
        return self._policy

    def wait_ms(self, account: str, published_until_ms: int | None) -> int:
        """Milliseconds until ``account`` may try again (0: go ahead), given the latest published lock of it
        (None: none seen). A published lock, once seen, replaces this replica's own."""
        now = self._clock.now_ms()
        with self._lock:
            state = self._accounts.get(account)
            if published_until_ms is not None:
                if state is not None:
                    state.locked_until_ms = 0
                return max(0, published_until_ms - now)
            if state is None:
                return 0
            return max(0, state.locked_until_ms - now)

    def failed(self, account: str, replicas: int) -> Lock | None:
        """Count a failed login; the lock to publish when this failure reaches this replica's share."""
        now = self._clock.now_ms()
        with self._lock:
            state = self._accounts.get(account)
            if state is None:
                state = self._accounts[account] = _Account()
                if len(self._accounts) > self._policy.max_keys:
                    self._accounts.popitem(last=False)
            else:
                self._accounts.move_to_end(account)
            if now - state.last_failure_ms >= self._policy.window_ms:
                state.failures = 0
            state.failures += 1
            state.last_failure_ms = now
            if state.failures < self._policy.share(replicas):
                return None
            failures, state.failures = state.failures, 0
            state.locked_until_ms = now + self._policy.duration_ms
            return Lock(account, now, state.locked_until_ms, failures)

    def succeeded(self, account: str) -> None:
        """A successful login resets the account's count on this replica (Vault does the same)."""
        with self._lock:
            state = self._accounts.get(account)
            if state is not None:
                state.failures = 0

    def released(self, account: str) -> None:
        """A super user unlocked the account: this replica forgets its count and its own lock."""
        with self._lock:
            self._accounts.pop(account, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._accounts)
