"""How much a Java ZooKeeper client can list, and who may still add to the lists brokers must list.

A broker loads tokens with ``getChildren`` on ``/delegation_token/tokens`` and follows changes with
``getChildren`` on ``/delegation_token/token_changes``. A Java ZooKeeper client refuses any reply whose length
exceeds ``jute.maxbuffer`` (1,048,575 bytes unless raised): the request ends in ConnectionLoss, and a broker
that cannot list those children neither loads tokens nor follows their changes. kts therefore keeps both
lists under a byte budget (``zookeeper.children.max.bytes``).

A reply to getChildren2 (what brokers send, and ZooKeeperMain's ``ls`` too: the children with the parent's Stat)
is, in bytes::

    16 (reply header: xid, zxid, err) + 4 (child count) + 68 (Stat) + per child 4 (length) + UTF-8 name

Names have fixed lengths: a tokenId is 22 characters (base64url of 16 bytes), a notification
``token_change_`` plus ZooKeeper's 10-digit sequence, 23. So a token costs 26 bytes and a notification 27.

The budget is shared out by purpose, so that revocation always has room and operators keep a way in:

- creates and renews (``ISSUE``), and expires that extend a token's life (a renew by another name), stop at
  the budget minus a reserve of a tenth of it;
- super users' creates, renews and extending expires (``SUPER_USER_ISSUE``) may use half of the reserve: when
  everyone else is refused an operator can still issue and renew;
- the expiry sweep (``SWEEP``) may use half of the reserve, and paces itself to it;
- expires that shorten a token's life (``REVOKE``) may use the whole budget: after every create and renew
  stops, half the reserve holds ``reserve / 2 / 27`` of them (1,851 at the default budget) within the 15
  minutes notifications live.

No single principal reaches these limits alone: each is held to its own share of them first
(app/domain/token_share.py).

Deleting a token (an expire, a revocation, the sweep) is never refused. That is safe because creates and renews
count every live token as a notification to come: each will write one when it is deleted, so the notifications
of all deletions already fit under the limit of creates, however many tokens are deleted at once.

Replicas check, then write: N replicas each with C writes in flight may pass a limit by at most N x C
entries (docs/operations.md#token-capacity).
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.errors import CapacityExhausted

REPLY_HEADER_BYTES = 16
CHILD_COUNT_BYTES = 4
STAT_BYTES = 68
NAME_LENGTH_BYTES = 4
REPLY_FIXED_BYTES = REPLY_HEADER_BYTES + CHILD_COUNT_BYTES + STAT_BYTES
# The Java client (ClientCnxnSocket.readLength) refuses a reply longer than jute.maxbuffer.
JAVA_DEFAULT_MAX_BUFFER = 0xFFFFF
DEFAULT_MAX_BYTES = 1_000_000
RESERVE_FRACTION = 10  # the reserve is max_bytes // RESERVE_FRACTION
WARNING_FRACTION = 0.8
NOTIFICATION_RETENTION_MS = 15 * 60 * 1000  # brokers (and the kts leader) purge notifications older than this
# A reading this recent and this far from its limit is trusted: to reach the limit from there, all writers
# together would need to add more than 16,000 entries in a second. Nearer (or with a small budget) every decision
# reads ZooKeeper again.
FRESH_FOR_MS = 1_000
TRUSTED_MARGIN_BYTES = 450_000
MIN_RETRY_AFTER_S = 1
UNKNOWN_RETRY_AFTER_S = 60


class ChildList(enum.Enum):
    TOKENS = "tokens"
    TOKEN_CHANGES = "token_changes"

    @property
    def path(self) -> str:
        return f"/delegation_token/{self.value}"

    @property
    def name_length(self) -> int:
        return 22 if self is ChildList.TOKENS else 23

    @property
    def entry_bytes(self) -> int:
        return NAME_LENGTH_BYTES + self.name_length


class Purpose(enum.Enum):
    ISSUE = "issue"  # create, renew, an expire that extends
    SUPER_USER_ISSUE = "super-user-issue"  # the same by a super user: half the reserve is theirs
    SWEEP = "sweep"
    REVOKE = "revoke"  # an expire that shortens


def reply_bytes(entries: int, name_bytes: int) -> int:
    """The length of a getChildren2 reply listing ``entries`` children whose names take ``name_bytes``."""
    return REPLY_FIXED_BYTES + entries * NAME_LENGTH_BYTES + name_bytes


def names_reply_bytes(names: list[str]) -> int:
    """The length of a getChildren2 reply listing exactly these names."""
    return reply_bytes(len(names), sum(len(name.encode("utf-8")) for name in names))


@dataclass(frozen=True, slots=True)
class ListReading:
    child_list: ChildList
    entries: int

    @property
    def bytes(self) -> int:
        return reply_bytes(self.entries, self.entries * self.child_list.name_length)


Readings = Mapping[ChildList, ListReading]


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        if self.max_bytes <= REPLY_FIXED_BYTES:
            raise ValueError(f"the budget must exceed {REPLY_FIXED_BYTES} bytes, the reply to an empty listing")

    @property
    def reserve_bytes(self) -> int:
        return self.max_bytes // RESERVE_FRACTION

    def limit(self, purpose: Purpose) -> int:
        if purpose is Purpose.ISSUE:
            return self.max_bytes - self.reserve_bytes
        if purpose in (Purpose.SUPER_USER_ISSUE, Purpose.SWEEP):
            return self.max_bytes - self.reserve_bytes // 2
        return self.max_bytes

    def room(self, reading: ListReading, purpose: Purpose) -> int:
        """How many more entries fit in this list under ``purpose``'s limit (0 when none)."""
        return max(0, (self.limit(purpose) - reading.bytes) // reading.child_list.entry_bytes)

    def max_entries(self, child_list: ChildList, purpose: Purpose) -> int:
        return self.room(ListReading(child_list, 0), purpose)

    def full_list(self, readings: Readings, adding: Mapping[ChildList, int], purpose: Purpose) -> ChildList | None:
        """The first list that adding these entries would take past ``purpose``'s limit, or None. Except for the
        sweep, the notification list is counted with one notification to come per live token (module doc)."""
        counted = readings if purpose is Purpose.SWEEP else with_notifications_to_come(readings)
        for child_list, count in adding.items():
            if child_list is ChildList.TOKEN_CHANGES and purpose is not Purpose.SWEEP:
                count += adding.get(ChildList.TOKENS, 0)  # a new token's own notification to come
            if count > 0 and self.room(counted[child_list], purpose) < count:
                return child_list
        return None

    def trusted(self, reading: ListReading, age_ms: int, purpose: Purpose) -> bool:
        """Whether a reading ``age_ms`` old may decide without reading ZooKeeper again."""
        return 0 <= age_ms < FRESH_FOR_MS and self.limit(purpose) - reading.bytes >= TRUSTED_MARGIN_BYTES

    def warns(self, reading: ListReading) -> bool:
        return reading.bytes >= self.max_bytes * WARNING_FRACTION

    def near(self, readings: Readings) -> bool:
        """Either list, counted as creates see it, is past the 80% warning: expired tokens should go now."""
        return any(self.warns(reading) for reading in with_notifications_to_come(readings).values())


# What each operation adds to each list (a delete's negative effect on the tokens list is not counted: it is
# never needed to admit an operation).
CREATE: Mapping[ChildList, int] = {ChildList.TOKENS: 1, ChildList.TOKEN_CHANGES: 1}
RENEW: Mapping[ChildList, int] = {ChildList.TOKEN_CHANGES: 1}
EXPIRE: Mapping[ChildList, int] = {ChildList.TOKEN_CHANGES: 1}


def with_notifications_to_come(readings: Readings) -> Readings:
    """The readings with the notification list counting one notification to come per live token: what creates,
    renews and expires are admitted against, what the 80% warning and the capacity-left gauge watch."""
    tokens = readings[ChildList.TOKENS].entries
    changes = readings[ChildList.TOKEN_CHANGES]
    return {**readings, ChildList.TOKEN_CHANGES: ListReading(ChildList.TOKEN_CHANGES, changes.entries + tokens)}


def exhausted(child_list: ChildList, now_ms: int, room_expected_ms: int | None) -> CapacityExhausted:
    """The refusal for a full list: a sentence naming it and when room is expected, and seconds to wait."""
    if child_list is ChildList.TOKEN_CHANGES:
        what = (
            f"The token change notification list ({child_list.path}) is full, counting the notification each live "
            "token will write when it is deleted"
        )
        when = "room is expected once the oldest notification is 15 minutes old and purged"
        if room_expected_ms is not None:
            when = f"room is expected at {_iso(room_expected_ms)}, when the oldest notification turns 15 minutes old"
    else:
        what = f"The token list ({child_list.path}) is full"
        when = "room is expected when a token is expired or expires and is swept"
        if room_expected_ms is not None:
            when = f"room is expected after the next token expiry at {_iso(room_expected_ms)}, once it is swept"
    return CapacityExhausted(f"{what}: {when}.", retry_after_s(now_ms, room_expected_ms))


def retry_after_s(now_ms: int, room_expected_ms: int | None) -> int:
    if room_expected_ms is None:
        return UNKNOWN_RETRY_AFTER_S
    return max(MIN_RETRY_AFTER_S, -(-(room_expected_ms - now_ms) // 1000))


def notification_room_expected_ms(oldest_created_ms: int | None) -> int | None:
    return None if oldest_created_ms is None else oldest_created_ms + NOTIFICATION_RETENTION_MS


def _iso(epoch_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
