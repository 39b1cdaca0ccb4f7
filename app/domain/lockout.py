"""Per-account lockout shared by every replica, as HashiCorp Vault's user lockout: ``threshold`` failed
password checks for one claimed user name, whatever the source address, lock that account for ``duration_ms``.

Counting is local, locking is shared. Each replica counts the failures of each account itself; when its count
reaches its share of the threshold, ``ceil(threshold / replicas)``, it locks the account at once and asks for the
lock to be shared (a lock every replica sees, app/service/ports.LockoutStore). Across ``n`` replicas at most
``n * ceil(threshold / n)``, fewer than ``threshold + n``, wrong passwords are checked per window.

Count before check. A password check is reserved (``begin``) before it runs and settled (``failed``,
``succeeded``, ``abandoned``) after: a replica never has more checks reserved or failed than its share, however
many attempts arrive at once. (The service lets one check per account run at a time on each replica,
app/service/lockout.py; the reservation keeps the bound even without that.)

A success (a check's, or a login the verified-password cache answered without one, ``forgive``) forgives only
its own address's failures: they were the user's typos. Failures from other addresses stay counted, so a victim
whose services log in every few seconds does not keep resetting an attacker's count.
Addresses are grouped as the throttle groups them (an IPv6 address as its /64).

A replica's own lock bridges the time until the lock is shared, and stands alone when it cannot be (the store
is full or unreachable): ``shared`` drops it once the store holds the lock.

Keys. Accounts are kept under ``account_key``, a hash of the whole name: names sharing a long prefix never share
a count or a lock, and every key has the same short length.

Memory. At most ``max_keys`` counts (and as many own locks). When full, a count whose window has passed goes
first, then the lowest counts, oldest first: an attacker spraying fresh names evicts its own one-failure
counts, not the count of an account it has nearly locked.

Everything reads time from the injected clock; state sits behind one lock.
"""

from __future__ import annotations

import hashlib
import ipaddress
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from app.domain.clock import Clock
from app.domain.throttle import address_group

KEY_HEX_CHARS = 40  # 160 bits of SHA-256: no one can choose a name that shares another's lock


def account_key(account: str) -> str:
    """The key of an account (``User:<name>``, any text: NUL and lone surrogates included)."""
    return hashlib.sha256(account.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_HEX_CHARS]


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
    """``account`` (kept under ``key``) is locked for ``duration_ms`` from when the store takes the lock, after
    ``failures`` failures counted by this replica at ``locked_at_ms`` (this replica's clock: for people only)."""

    key: str
    account: str
    failures: int
    duration_ms: int
    locked_at_ms: int


@dataclass(frozen=True, slots=True)
class LockInForce:
    """A shared lock in force: the account kept under ``key`` (None where the store keeps the key alone) and how
    much longer the lock lasts by the store's clock."""

    key: str
    account: str | None
    remaining_ms: int


class ExemptAddresses:
    """Client addresses from which super users' accounts are never locked (none by default: the operators' way
    in is ``kts lockout release``). Addresses and CIDR networks, IPv4 or IPv6; an IPv4-mapped IPv6 address is its
    IPv4 address."""

    def __init__(self, entries: Iterable[str]) -> None:
        networks = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                raise ValueError(f"{entry.strip()!r} is not an IP address or CIDR network") from None
        self._networks = tuple(networks)

    @classmethod
    def parse(cls, value: str) -> ExemptAddresses:
        """A comma-separated list (empty: none)."""
        return cls(part for part in value.split(",") if part.strip())

    def __contains__(self, address: str) -> bool:
        if not self._networks:  # the usual case: no address to parse
            return False
        try:
            parsed = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False  # not an address (a test client's name): never exempt
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            parsed = parsed.ipv4_mapped
        return any(parsed in network for network in self._networks)

    def __bool__(self) -> bool:
        return bool(self._networks)


class _Account:
    __slots__ = ("by_address", "checking", "failures", "last_failure_ms")

    def __init__(self) -> None:
        self.failures = 0
        self.by_address: dict[str, int] = {}
        self.last_failure_ms = 0
        self.checking = 0  # checks reserved and not yet settled


class AccountLockout:
    def __init__(self, policy: LockoutPolicy, clock: Clock) -> None:
        self._policy = policy
        self._clock = clock
        self._accounts: dict[str, _Account] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()  # accounts with failures, least recently failed first
        self._levels: dict[int, OrderedDict[str, None]] = {}  # the same accounts by failure count
        self._own_locks: OrderedDict[str, int] = OrderedDict()  # key -> until ms, soonest ending first
        self._lock = threading.Lock()

    @property
    def policy(self) -> LockoutPolicy:
        return self._policy

    def own_lock_ms(self, key: str) -> int:
        """Milliseconds this replica's own lock of the account still lasts (0: none)."""
        now = self._clock.now_ms()
        with self._lock:
            return self._own_lock_ms(key, now)

    def begin(self, key: str, replicas: int) -> int:
        """Reserve a password check of the account: 0 when it may run (settle it with ``failed``, ``succeeded``
        or ``abandoned``), else the milliseconds until it may (locked here, or this replica's share is used)."""
        now = self._clock.now_ms()
        with self._lock:
            locked = self._own_lock_ms(key, now)
            if locked:
                return locked
            state = self._current(key, now)
            if state is not None and state.failures + state.checking >= self._policy.share(replicas):
                return max(1, state.last_failure_ms + self._policy.window_ms - now)
            if state is None:
                state = self._accounts[key] = _Account()
            state.checking += 1
            return 0

    def failed(self, key: str, account: str, address: str, replicas: int) -> Lock | None:
        """Settle a check as a wrong password from ``address``; the lock to share when it reaches the share."""
        now = self._clock.now_ms()
        group = address_group(address)
        with self._lock:
            state = self._current(key, now) or self._accounts.setdefault(key, _Account())
            state.checking = max(0, state.checking - 1)
            self._set_failures(key, state, state.failures + 1)
            state.by_address[group] = state.by_address.get(group, 0) + 1
            state.last_failure_ms = now
            self._recent[key] = None
            self._recent.move_to_end(key)
            if state.failures < self._policy.share(replicas):
                self._evict(now)
                return None
            failures = state.failures
            self._forget(key)
            self._own_locks[key] = now + self._policy.duration_ms
            self._own_locks.move_to_end(key)
            while len(self._own_locks) > self._policy.max_keys:
                self._own_locks.popitem(last=False)
            return Lock(key, account, failures, self._policy.duration_ms, now)

    def succeeded(self, key: str, address: str) -> None:
        """Settle a check as the right password: the failures from this address were the user's own typos."""
        self._right_password(key, address, settles_check=True)

    def forgive(self, key: str, address: str) -> None:
        """The right password from ``address`` without a check of this lockout's (one the verified-password cache
        answered): its typos are forgiven as after a check, and no reserved check is settled."""
        self._right_password(key, address, settles_check=False)

    def abandoned(self, key: str) -> None:
        """Settle a check that ended without a verdict (the credential could not be read)."""
        now = self._clock.now_ms()
        with self._lock:
            state = self._current(key, now)
            if state is not None:
                state.checking = max(0, state.checking - 1)
                self._drop_if_empty(key, state)

    def shared(self, key: str) -> None:
        """The account's lock is in the shared store now, which decides from here on."""
        with self._lock:
            self._own_locks.pop(key, None)

    def released(self, key: str) -> None:
        """A super user unlocked the account: this replica forgets its count and its own lock."""
        with self._lock:
            self._own_locks.pop(key, None)
            state = self._accounts.get(key)
            if state is not None:
                checking = state.checking
                self._forget(key)
                if checking:
                    self._accounts[key] = _Account()
                    self._accounts[key].checking = checking

    def failures(self, key: str) -> int:
        """This replica's count of the account's failures in the current window."""
        now = self._clock.now_ms()
        with self._lock:
            state = self._current(key, now)
            return 0 if state is None else state.failures

    def __len__(self) -> int:
        """Counts held (bounded by ``max_keys`` plus the checks running)."""
        with self._lock:
            return len(self._accounts)

    def _right_password(self, key: str, address: str, *, settles_check: bool) -> None:
        now = self._clock.now_ms()
        with self._lock:
            state = self._current(key, now)
            if state is None:
                return
            if settles_check:
                state.checking = max(0, state.checking - 1)
            typos = state.by_address.pop(address_group(address), 0)
            self._set_failures(key, state, state.failures - typos)
            self._drop_if_empty(key, state)

    # -- called with the lock held

    def _own_lock_ms(self, key: str, now: int) -> int:
        until = self._own_locks.get(key)
        if until is None:
            return 0
        if until <= now:
            del self._own_locks[key]
            return 0
        return until - now

    def _current(self, key: str, now: int) -> _Account | None:
        """The account's state, its count cleared when its window has passed."""
        state = self._accounts.get(key)
        if state is not None and state.failures and now - state.last_failure_ms >= self._policy.window_ms:
            self._set_failures(key, state, 0)
            state.by_address.clear()
            if self._drop_if_empty(key, state):
                return None
        return state

    def _set_failures(self, key: str, state: _Account, failures: int) -> None:
        if state.failures:
            level = self._levels[state.failures]
            level.pop(key, None)
            if not level:
                del self._levels[state.failures]
        state.failures = max(0, failures)
        if state.failures:
            self._levels.setdefault(state.failures, OrderedDict())[key] = None
        else:
            self._recent.pop(key, None)

    def _drop_if_empty(self, key: str, state: _Account) -> bool:
        if state.failures or state.checking:
            return False
        self._accounts.pop(key, None)
        return True

    def _forget(self, key: str) -> None:
        state = self._accounts.pop(key, None)
        if state is not None:
            self._set_failures(key, state, 0)

    def _evict(self, now: int) -> None:
        while len(self._recent) > self._policy.max_keys:
            oldest = next(iter(self._recent))
            state = self._accounts[oldest]
            if now - state.last_failure_ms < self._policy.window_ms:
                # No count has passed its window: the lowest count goes, the least recently failed of them.
                oldest = next(iter(self._levels[min(self._levels)]))
            self._forget(oldest)
