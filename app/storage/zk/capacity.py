"""The cluster-wide token capacity guard: before a create, renew or expire writes, make sure neither child
list brokers must list (tokens, token change notifications) would pass its limit (app/domain/capacity.py).

Sizes come from ZooKeeper itself (the parents' child counts), so every replica judges the same lists. A
reading is reused only while it is both very recent and far from the limit; near a limit every decision reads
again. The expiry sweep asks how many deletions fit and paces itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from app.domain import capacity
from app.domain.capacity import CapacityPolicy, ChildList, ListReading, Purpose, Readings
from app.domain.clock import Clock

log = logging.getLogger(__name__)
ESTIMATE_FOR_MS = 5_000  # a refusal's "when room is expected" is worked out at most this often
LOG_EVERY_MS = 10_000


class ChildListGauge(Protocol):
    """The size of the child lists brokers must list (app/domain/capacity.py), read from ZooKeeper
    (app/storage/zk/child_lists.py)."""

    def entries(self) -> dict[ChildList, int]:
        """How many children each list has now (its parent's Stat)."""
        ...

    def oldest_notification_created_ms(self) -> int | None:
        """When the oldest token change notification was created (None: there is none)."""
        ...


class CapacityGuard:
    def __init__(
        self,
        gauge: ChildListGauge,
        policy: CapacityPolicy,
        *,
        clock: Clock,
        next_expiry_ms: Callable[[], int | None],
    ) -> None:
        """``next_expiry_ms``: the earliest expiry among the tokens (None: no token)."""
        self._gauge = gauge
        self.policy = policy
        self._clock = clock
        self._next_expiry_ms = next_expiry_ms
        self._lock = threading.Lock()
        self._readings: Readings | None = None
        self._read_at_ms = 0
        self._warned: set[ChildList] = set()
        self._estimates: dict[ChildList, tuple[int, int | None]] = {}
        self._logged_ms: dict[ChildList, int] = {}

    def admit_create(self, *, super_user: bool = False) -> None:
        """Super users may use half of the reserve: when everyone else is refused, operators still issue."""
        self._admit(capacity.CREATE, _issue(super_user))

    def admit_renew(self, *, super_user: bool = False) -> None:
        """Also an expire that extends a token's life: a renew by another name."""
        self._admit(capacity.RENEW, _issue(super_user))

    def admit_expire(self) -> None:
        """An expire that shortens a token's life may use the whole budget, reserve included: refused only once
        even that is used up. An expire that deletes the token is never asked (TokenService)."""
        self._admit(capacity.EXPIRE, Purpose.REVOKE)

    def sweep_room(self) -> int:
        """How many tokens the sweep may delete now (each writes a notification)."""
        readings = self.read()
        return self.policy.room(readings[ChildList.TOKEN_CHANGES], Purpose.SWEEP)

    def near_limit(self) -> bool:
        """Whether either list is past the 80% warning now (read from ZooKeeper): the sweep comes early."""
        return self.policy.near(self.read())

    def read(self) -> Readings:
        """Both lists as ZooKeeper has them now (StoreUnavailable when it cannot be reached)."""
        entries = self._gauge.entries()
        readings = {child_list: ListReading(child_list, entries.get(child_list, 0)) for child_list in ChildList}
        with self._lock:
            self._readings = readings
            self._read_at_ms = self._clock.now_ms()
        self._warn(readings)
        return readings

    def _admit(self, adding: Mapping[ChildList, int], purpose: Purpose) -> None:
        readings = self._trusted_readings(purpose) or self.read()
        full = self.policy.full_list(readings, adding, purpose)
        if full is not None:
            now = self._clock.now_ms()
            refusal = capacity.exhausted(full, now, self._room_expected_ms(full, now))
            if now - self._logged_ms.get(full, -LOG_EVERY_MS) >= LOG_EVERY_MS:  # a flood is one line per 10 s
                self._logged_ms[full] = now
                log.warning("refusing token writes: %s", refusal.message)
            raise refusal

    def _trusted_readings(self, purpose: Purpose) -> Readings | None:
        with self._lock:
            readings, read_at = self._readings, self._read_at_ms
        if readings is None:
            return None
        age = self._clock.now_ms() - read_at
        counted = readings if purpose is Purpose.SWEEP else capacity.with_notifications_to_come(readings)
        trusted = all(self.policy.trusted(reading, age, purpose) for reading in counted.values())
        return readings if trusted else None

    def _room_expected_ms(self, child_list: ChildList, now_ms: int) -> int | None:
        cached = self._estimates.get(child_list)
        if cached is not None and now_ms - cached[0] < ESTIMATE_FOR_MS:
            return cached[1]
        if child_list is ChildList.TOKEN_CHANGES:
            expected = capacity.notification_room_expected_ms(self._gauge.oldest_notification_created_ms())
        else:
            expected = self._next_expiry_ms()
            if expected is not None and expected <= now_ms:  # expired tokens wait for the sweep: when is unknown
                expected = None
        self._estimates[child_list] = (now_ms, expected)
        return expected

    def _warn(self, readings: Readings) -> None:
        for child_list, reading in capacity.with_notifications_to_come(readings).items():
            if self.policy.warns(reading):
                if child_list not in self._warned:
                    self._warned.add(child_list)
                    log.warning(
                        "%s lists %d children in %d bytes (notifications: with one to come per live token), past "
                        "80%% of zookeeper.children.max.bytes=%d: creates and renews stop at %d bytes",
                        child_list.path,
                        reading.entries,
                        reading.bytes,
                        self.policy.max_bytes,
                        self.policy.limit(Purpose.ISSUE),
                    )
            else:
                self._warned.discard(child_list)


def _issue(super_user: bool) -> Purpose:
    return Purpose.SUPER_USER_ISSUE if super_user else Purpose.ISSUE
