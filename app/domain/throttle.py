"""Brute-force defence: repeated failed attempts (logins, token verifies) slow down to "retry later"
without ever locking the legitimate user out from a clean address.

Keys and limits. Each failed attempt is charged to three keys: the client address, the claimed subject
(``User:<name>`` for a password, ``DelegationToken:<id>`` for an HMAC) and the (subject, address) pair.
Addresses are grouped as networks hand them out: an IPv6 address counts as its /64 (one host gets a whole
/64), an IPv4-mapped IPv6 address as the IPv4 address. With a per-account lockout (``app/domain/lockout.py``)
password logins are its to count: their failures are charged to the address alone (``count_subject``), so
that an account has one rule, not two, except where the lockout does not count them (a super user from an
exempt address): those are charged to the pair as well (``count_pair``), so guessing from there is as slow as
from anywhere; ``counted_subjects`` can restrict the subject keys by prefix.
A key is a leaky bucket (GCRA) holding at most ``max_failures`` failures that drains one failure every
``window_ms / max_failures``: ``max_failures`` failures in a burst, then one more every
``window_ms / max_failures``; a key whose last failure is ``window_ms`` old is clean again.

The rule. An attempt is refused (429 with Retry-After) before any credential is looked at when

1. its address is full (``address_max_failures``): one address guessing many names or tokens; or
2. its (subject, address) pair is full (``max_failures``): one address guessing one password; or
3. its subject is full (``max_failures``) and this same pair has itself failed within ``window_ms``:
   many addresses guessing one password each get one try per window.

Rule 3 never refuses an address that has not failed for that subject, so the legitimate user logging in
correctly from another address is never refused because of an attacker's failures. A success resets its
pair and takes that pair's failures back from the subject (they were the user's own typos); it does not
reset its address (an attacker holding one valid account must not wipe the address's failures).
Clients that share the attacker's address (one NAT, or a proxy that hides client addresses) are slowed
down with it: that is the price of rule 1.

Audit. Attempts are grouped into bursts by (address, subject); attempts refused by rule 1 form one burst
per address whatever they claim, and so do failures that named no known user or token (``known=False``):
fresh names must not each cost a row. A burst's first attempt is recorded in full; the others are counted
and reported as one coalesced record (``BurstSummary``, with a few sample names for a burst of unknown
names) at most once per window while the burst lasts, and once when it ends (a window without attempts,
noticed at the next call) or is evicted. So an address causes a bounded number of records per window
whatever names it tries.

Memory. Buckets and bursts live in two LRU maps of at most ``max_keys`` entries each, ordered by last
activity; drained entries are dropped from the old end as time passes. An attacker with more addresses
than ``max_keys`` can push its own entries out (and so escape rules 1 and 2), never grow memory.

Everything reads time from the injected clock; all state sits behind one lock (each call is amortised O(1)).
"""

from __future__ import annotations

import functools
import ipaddress
import threading
from collections import OrderedDict
from dataclasses import dataclass

from app.domain.clock import Clock

# Longer claimed names share a key: an attacker choosing absurd names only throttles itself sooner.
MAX_SUBJECT_LENGTH = 256
# The burst of attempts refused because their address is full, whatever subject they claim.
ADDRESS_WIDE = "*"
# The burst of failures from one address that named no known user or token.
UNKNOWN_NAMES = "?"
# Names a burst of unknown names keeps as samples, and how much of each.
MAX_SAMPLES = 5
SAMPLE_CHARS = 64


TOKEN_SUBJECT_PREFIX = "DelegationToken:"
UNREACHED = 2**31  # a limit no client reaches


IPV6_GROUP_PREFIX = 64


def token_subject(token_id: str) -> str:
    return TOKEN_SUBJECT_PREFIX + token_id


@functools.lru_cache(maxsize=4096)  # parsing took longer than the rest of a login's throttle bookkeeping
def address_group(address: str) -> str:
    """The key an address is counted under: an IPv6 address's /64 network, an IPv4-mapped IPv6 address's IPv4
    address, any other address (or a name that is no address) as it is."""
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_GROUP_PREFIX), strict=False))
    return str(parsed)


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``max_failures`` failures in a burst, then one every ``window_ms / max_failures``.

    A bucket is its theoretical arrival time ``tat`` in units of ``1 / max_failures`` ms, so that all
    arithmetic stays in exact integers.
    """

    max_failures: int
    window_ms: int

    def __post_init__(self) -> None:
        if self.max_failures < 1 or self.window_ms < 1:
            raise ValueError("a limit needs at least one failure and a window of at least 1 ms")

    def charge(self, tat: int, now_ms: int) -> int:
        """The bucket after one more failure at ``now_ms``; a full bucket stays full (excess spills over)."""
        now = now_ms * self.max_failures
        return min(max(tat, now) + self.window_ms, now + self.window_ms * self.max_failures)

    def wait_ms(self, tat: int, now_ms: int) -> int:
        """Milliseconds until the bucket takes another failure; 0 when it takes one now."""
        excess = tat - now_ms * self.max_failures - self.window_ms * (self.max_failures - 1)
        return 0 if excess <= 0 else -(-excess // self.max_failures)


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    max_failures: int = 10  # per (subject, address) pair and per subject
    address_max_failures: int = 100
    window_ms: int = 60_000
    max_keys: int = 100_000
    # Subjects (by prefix) the per-subject and per-pair keys count; None: every subject.
    counted_subjects: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls, max_failures: int, address_max_failures: int, *, window_ms: int, max_keys: int, lockout: bool
    ) -> ThrottlePolicy | None:
        """The throttle of one kind of attempt (``max_failures`` 0: turned off); ``lockout``: whether the account
        lockout counts these attempts too. None when neither is on. With the lockout alone, a throttle whose limits
        no client reaches still groups the audit records of a locked account's refused attempts into bursts."""
        if max_failures:
            return cls(max_failures, address_max_failures, window_ms, max_keys)
        if lockout:
            return cls(UNREACHED, UNREACHED, window_ms, max_keys, counted_subjects=())
        return None

    def counts(self, subject: str) -> bool:
        return self.counted_subjects is None or subject.startswith(self.counted_subjects)

    def __post_init__(self) -> None:
        if self.max_keys < 1:
            raise ValueError("max_keys must be at least 1")

    @property
    def pair(self) -> Limit:
        return Limit(self.max_failures, self.window_ms)

    @property
    def address(self) -> Limit:
        return Limit(self.address_max_failures, self.window_ms)


@dataclass(frozen=True, slots=True)
class BurstSummary:
    """Attempts of one burst not yet recorded: ``attempts`` of which ``refused`` were refused unchecked."""

    address: str
    subject: str | None  # None for attempts that claimed nothing, a burst of rule 1 refusals or of unknown names
    attempts: int
    refused: int
    first_attempt_ms: int
    last_attempt_ms: int
    unknown_names: bool = False  # a burst of failures that named no known user or token
    samples: tuple[str, ...] = ()  # of those names, a few (cut to SAMPLE_CHARS)


@dataclass(frozen=True, slots=True)
class AuditPlan:
    """What to record now: this attempt in full (the first of its burst) and any summaries due."""

    record_attempt: bool = False
    summaries: tuple[BurstSummary, ...] = ()


@dataclass(frozen=True, slots=True)
class Admission:
    retry_after_ms: int  # 0: go ahead and check the credentials
    audit: AuditPlan

    @property
    def refused(self) -> bool:
        return self.retry_after_ms > 0


class _Bucket:
    __slots__ = ("last_failure_ms", "tat")

    def __init__(self) -> None:
        self.tat = 0
        self.last_failure_ms = 0


class _Burst:
    __slots__ = ("attempts", "first_ms", "last_ms", "refused", "reported_ms", "samples")

    def __init__(self, now_ms: int) -> None:
        self.first_ms = now_ms  # first attempt not yet reported
        self.last_ms = now_ms
        self.reported_ms = now_ms
        self.attempts = 0
        self.refused = 0
        self.samples: list[str] = []


_BucketKey = tuple[str, ...]
_BurstKey = tuple[str, str | None]


class FailureThrottle:
    """The rule above over in-memory, bounded, thread-safe state."""

    def __init__(self, policy: ThrottlePolicy, clock: Clock) -> None:
        self._policy = policy
        self._pair = policy.pair
        self._address = policy.address
        self._clock = clock
        self._buckets: OrderedDict[_BucketKey, _Bucket] = OrderedDict()
        self._bursts: OrderedDict[_BurstKey, _Burst] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, address: str, subject: str | None) -> Admission:
        """Whether an attempt may have its credentials checked; a refusal counts in its burst."""
        subject = _bounded(subject)
        address = address_group(address)
        now = self._clock.now_ms()
        with self._lock:
            summaries = self._expire(now)
            retry, burst_subject = self._refusal(address, subject, now)
            record = False
            if retry:
                record = self._attempt((address, burst_subject), subject, now, refused=True, summaries=summaries)
            return Admission(retry, AuditPlan(record, tuple(summaries)))

    def failed(
        self,
        address: str,
        subject: str | None,
        *,
        count_subject: bool = True,
        count_pair: bool | None = None,
        known: bool = True,
    ) -> AuditPlan:
        """Charge a failed credential check to its keys and its burst; with ``count_subject`` False only to its
        address (another rule, the account lockout, counts the subject), and to its (subject, address) pair with
        ``count_pair`` (default: as ``count_subject``). ``known`` False: the subject named no known user or token,
        and the failure joins its address's burst of unknown names."""
        subject = _bounded(subject)
        address = address_group(address)
        now = self._clock.now_ms()
        count_pair = count_subject if count_pair is None else count_pair
        with self._lock:
            summaries = self._expire(now)
            self._charge(("address", address), self._address, now)
            if subject is not None and self._policy.counts(subject):
                if count_subject:
                    self._charge(("subject", subject), self._pair, now)
                if count_pair:
                    self._charge(("pair", subject, address), self._pair, now)
            if known or subject is None:
                record = self._attempt((address, subject), subject, now, refused=False, summaries=summaries)
            else:
                record = self._attempt(
                    (address, UNKNOWN_NAMES), subject, now, refused=False, summaries=summaries, sample=subject
                )
            return AuditPlan(record, tuple(summaries))

    def succeeded(self, address: str, subject: str | None) -> None:
        """A successful check resets its pair and takes the pair's failures back from its subject: they were
        the user's own typos, not an attack on the subject."""
        if subject is None:
            return
        subject = subject[:MAX_SUBJECT_LENGTH]
        address = address_group(address)
        with self._lock:
            pair = self._buckets.pop(("pair", subject, address), None)
            if pair is None:
                return
            shared = self._buckets.get(("subject", subject))
            if shared is not None:
                now = self._clock.now_ms() * self._pair.max_failures
                shared.tat = max(now, shared.tat - max(0, pair.tat - now))

    def refuse(self, address: str, subject: str | None, retry_after_ms: int) -> Admission:
        """An attempt another rule refused (a locked account): counted in its burst like this rule's own."""
        subject = _bounded(subject)
        address = address_group(address)
        now = self._clock.now_ms()
        with self._lock:
            summaries = self._expire(now)
            record = self._attempt((address, subject), subject, now, refused=True, summaries=summaries)
            return Admission(max(1, retry_after_ms), AuditPlan(record, tuple(summaries)))

    def flush(self) -> list[BurstSummary]:
        """Every unreported attempt, as summaries (at shutdown)."""
        with self._lock:
            summaries = [_summary(key, burst) for key, burst in self._bursts.items() if burst.attempts]
            self._bursts.clear()
            return summaries

    def __len__(self) -> int:
        """Entries held (buckets and bursts): bounded by twice ``max_keys``."""
        with self._lock:
            return len(self._buckets) + len(self._bursts)

    # -- decisions (called with the lock held)

    def _refusal(self, address: str, subject: str | None, now: int) -> tuple[int, str | None]:
        """(milliseconds to wait, the burst a refusal belongs to); 0 when the attempt may go ahead."""
        by_address = self._wait(("address", address), self._address, now)
        if subject is None:
            return by_address, ADDRESS_WIDE
        pair = self._buckets.get(("pair", subject, address))
        by_pair = 0 if pair is None else self._pair.wait_ms(pair.tat, now)
        by_subject = 0
        if pair is not None and now - pair.last_failure_ms < self._policy.window_ms:
            subject_wait = self._wait(("subject", subject), self._pair, now)
            if subject_wait:  # until the subject drains or this pair's own failure is a window old
                by_subject = min(subject_wait, pair.last_failure_ms + self._policy.window_ms - now)
        wait = max(by_address, by_pair, by_subject)
        burst = subject if by_pair or by_subject else ADDRESS_WIDE
        return wait, burst

    def _wait(self, key: _BucketKey, limit: Limit, now: int) -> int:
        bucket = self._buckets.get(key)
        return 0 if bucket is None else limit.wait_ms(bucket.tat, now)

    # -- state changes (called with the lock held)

    def _charge(self, key: _BucketKey, limit: Limit, now: int) -> None:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket()
            if len(self._buckets) > self._policy.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        bucket.tat = limit.charge(bucket.tat, now)
        bucket.last_failure_ms = now

    def _attempt(
        self,
        key: _BurstKey,
        subject: str | None,
        now: int,
        *,
        refused: bool,
        summaries: list[BurstSummary],
        sample: str | None = None,
    ) -> bool:
        """Count an attempt in its burst; True when it opens the burst (record it in full)."""
        burst = self._bursts.get(key)
        if burst is None:
            self._bursts[key] = _Burst(now)
            if len(self._bursts) > self._policy.max_keys:
                evicted_key, evicted = self._bursts.popitem(last=False)
                if evicted.attempts:
                    summaries.append(_summary(evicted_key, evicted))
            return True
        self._bursts.move_to_end(key)
        if not burst.attempts:
            burst.first_ms = now
        burst.attempts += 1
        burst.refused += refused
        burst.last_ms = now
        if sample is not None and len(burst.samples) < MAX_SAMPLES:
            burst.samples.append(sample[:SAMPLE_CHARS])
        if now - burst.reported_ms >= self._policy.window_ms:
            summaries.append(_summary(key, burst))
            burst.reported_ms = now
            burst.attempts = burst.refused = 0
            burst.samples = []
        return False

    def _expire(self, now: int) -> list[BurstSummary]:
        """Drop drained buckets and ended bursts from the old ends; the ended bursts' summaries."""
        window = self._policy.window_ms
        while self._buckets:
            key, bucket = next(iter(self._buckets.items()))
            if now - bucket.last_failure_ms < window:
                break
            del self._buckets[key]  # a bucket is empty a window after its last failure (charge caps it)
        summaries: list[BurstSummary] = []
        while self._bursts:
            burst_key, burst = next(iter(self._bursts.items()))
            if now - burst.last_ms < window:
                break
            del self._bursts[burst_key]
            if burst.attempts:
                summaries.append(_summary(burst_key, burst))
        return summaries


def _bounded(subject: str | None) -> str | None:
    return None if subject is None else subject[:MAX_SUBJECT_LENGTH]


def _summary(key: _BurstKey, burst: _Burst) -> BurstSummary:
    address, subject = key
    return BurstSummary(
        address=address,
        subject=None if subject in (ADDRESS_WIDE, UNKNOWN_NAMES) else subject,
        attempts=burst.attempts,
        refused=burst.refused,
        first_attempt_ms=burst.first_ms,
        last_attempt_ms=burst.last_ms,
        unknown_names=subject == UNKNOWN_NAMES,
        samples=tuple(burst.samples),
    )
