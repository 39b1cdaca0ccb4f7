"""Each principal's fair share of the child lists brokers must list (app/domain/capacity.py).

The cluster-wide budget protects brokers, but on its own it is a lever: one principal making tokens that expire
at once (the live-token quotas never count them) or looping create and expire fills both lists, and then every
create and renew in the cluster is refused. So every principal's token writes are charged to its own share of
each list, ``token.write.share.ratio`` of ``zookeeper.children.max.bytes`` (5% by default: twenty principals
at their whole share, not one or a handful, are needed to reach the limit where creates stop for everyone).

What a principal is charged, in entries of each list (a token 26 bytes, a notification 27):

- **its tokens**: those it requested (for itself, or for another owner: KIP-373), for as long as they are in
  ZooKeeper, expired-but-not-swept included; each is an entry of the token list and, as the cluster guard
  counts it, a notification to come (the one its deletion will write);
- **the notifications its writes caused**: one per create, renew and expire that keeps the token, and the one
  written when one of its tokens is deleted (by anyone: an expire, a revocation, the sweep), which takes over
  from that token's notification to come. Each is counted from the minute it was written until that minute's
  end plus ``COUNTED_FOR_MS``: the 15 minutes after which notifications are purged, plus the minute between
  two purges.

A write is admitted when, with it, both the principal's token entries and its notification entries (those
counted plus one to come per token) fit in its share. Super users have no share: the cluster keeps them a
reserve instead (``Purpose.SUPER_USER_ISSUE``). Deleting a token is never refused, and the live-token quotas
(app/domain/token_quota.py) are judged on their own, before the share.

Pure rules with an injected "now": the notifications are kept per minute in a ``ShareLedger`` (whose keeping
across replicas is storage's business, app/storage/zk/token_shares.py), the tokens are counted by the caller.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass

from app.domain.capacity import NOTIFICATION_RETENTION_MS, ChildList
from app.domain.errors import TokenWriteShareExceeded
from app.domain.principal import KafkaPrincipal

DEFAULT_RATIO = 0.05
MINUTE_MS = 60_000
# The leader purges notifications older than 15 minutes once a minute: one may stay up to a minute longer.
PURGE_SLACK_MS = 60_000
COUNTED_FOR_MS = NOTIFICATION_RETENTION_MS + PURGE_SLACK_MS
TOKEN_BYTES = ChildList.TOKENS.entry_bytes
NOTIFICATION_BYTES = ChildList.TOKEN_CHANGES.entry_bytes
# A create adds a token, its notification and its notification to come: a share must hold at least that.
MIN_SHARE_BYTES = max(TOKEN_BYTES, 2 * NOTIFICATION_BYTES)
UNKNOWN_RETRY_AFTER_S = 60
# A batch of deletions (the sweep's, a bulk revocation's) writes the ledger of each of its tokens' requesters in
# its own transaction: a few hundred bytes each, so a batch names at most this many requesters.
MAX_REQUESTERS_PER_BATCH = 50
KEY = "token.write.share.ratio"


class ShareWrite(enum.Enum):
    """What a write adds to its principal's entries."""

    CREATE = "create"  # a token, its notification (and its notification to come)
    CHANGE = "change"  # a notification: a renew, an expire that keeps the token


@dataclass(frozen=True, slots=True)
class SharePolicy:
    share_bytes: int  # of each list; 0: no shares
    ratio: float = 0.0  # what it was derived from, for the messages

    def __post_init__(self) -> None:
        if self.share_bytes < 0:
            raise ValueError("a share is 0 (none) or more bytes")

    @classmethod
    def of(cls, max_bytes: int, ratio: float) -> SharePolicy:
        """``ratio`` of the budget (``zookeeper.children.max.bytes``); ratio 0: no shares."""
        if not 0 <= ratio <= 1:
            raise ValueError(f"{KEY} must be from 0 (no shares) to 1")
        return cls(int(max_bytes * ratio), ratio)

    @property
    def enabled(self) -> bool:
        return self.share_bytes > 0

    @property
    def max_tokens(self) -> int:
        return self.share_bytes // TOKEN_BYTES

    @property
    def max_notifications(self) -> int:
        """Notification entries, those counted plus one to come per token."""
        return self.share_bytes // NOTIFICATION_BYTES


def share_problem(max_bytes: int, ratio: float) -> str | None:
    """Why this ratio of this budget cannot work (one line naming the key), or None."""
    if not 0 <= ratio <= 1:
        return f"{ratio} is not from 0 (no shares) to 1"
    share = SharePolicy.of(max_bytes, ratio).share_bytes
    if 0 < ratio and share < MIN_SHARE_BYTES:
        return (
            f"{ratio} of zookeeper.children.max.bytes={max_bytes} is {share} bytes, less than one create needs "
            f"({MIN_SHARE_BYTES} bytes); raise it, or set 0 for no shares"
        )
    return None


def _minute(now_ms: int) -> int:
    return now_ms - now_ms % MINUTE_MS


def _counted_until(minute_ms: int) -> int:
    return minute_ms + MINUTE_MS + COUNTED_FOR_MS


@dataclass(frozen=True, slots=True)
class ShareLedger:
    """The notifications charged to one principal, per minute: ``(minute start in epoch ms, count)``, oldest
    first."""

    minutes: tuple[tuple[int, int], ...] = ()

    def notifications(self, now_ms: int) -> int:
        """Those still counted at ``now_ms``."""
        return sum(count for minute, count in self.minutes if now_ms < _counted_until(minute))

    def charged(self, count: int, now_ms: int) -> ShareLedger:
        """This ledger with ``count`` more notifications written at ``now_ms``, without the minutes no longer
        counted (so a ledger holds at most 17 minutes)."""
        kept = {minute: held for minute, held in self.minutes if now_ms < _counted_until(minute)}
        if count > 0:
            kept[_minute(now_ms)] = kept.get(_minute(now_ms), 0) + count
        return ShareLedger(tuple(sorted(kept.items())))

    def room_at(self, now_ms: int, wanted: int) -> int | None:
        """When at least ``wanted`` of the notifications counted now will no longer be (None: never, the ledger
        does not hold that many)."""
        freed = 0
        for minute, count in self.minutes:
            if now_ms < _counted_until(minute):
                freed += count
                if freed >= wanted:
                    return _counted_until(minute)
        return None


@dataclass(frozen=True, slots=True)
class ShareUse:
    """What one principal holds now."""

    tokens: int  # its tokens in ZooKeeper, expired-but-not-swept included
    notifications: int  # counted in its ledger

    def adding(self, write: ShareWrite) -> ShareUse:
        if write is ShareWrite.CREATE:
            return ShareUse(self.tokens + 1, self.notifications + 1)
        return ShareUse(self.tokens, self.notifications + 1)

    @property
    def notification_entries(self) -> int:
        """Counted notifications plus one to come per token, as the cluster guard counts them."""
        return self.notifications + self.tokens


def ensure_within(
    policy: SharePolicy, principal: KafkaPrincipal, tokens: int, ledger: ShareLedger, write: ShareWrite, now_ms: int
) -> None:
    """Raise TokenWriteShareExceeded when ``write`` would take ``principal`` past its share. The message gives
    the principal's own figures only."""
    if not policy.enabled:
        return
    use = ShareUse(tokens, ledger.notifications(now_ms))
    after = use.adding(write)
    tokens_over = after.tokens - policy.max_tokens
    notifications_over = after.notification_entries - policy.max_notifications
    if tokens_over <= 0 and notifications_over <= 0:
        return
    room_ms = None if tokens_over > 0 else ledger.room_at(now_ms, notifications_over)
    raise TokenWriteShareExceeded(_message(policy, principal, use, room_ms), _retry_after_s(now_ms, room_ms))


def _message(policy: SharePolicy, principal: KafkaPrincipal, use: ShareUse, room_ms: int | None) -> str:
    share = f"{policy.share_bytes} bytes of each token list"
    if policy.ratio:
        share += f" ({KEY}={policy.ratio:g} of zookeeper.children.max.bytes)"
    held = (
        f"its {use.tokens} tokens (until swept, expired ones included) take {use.tokens * TOKEN_BYTES} bytes of "
        f"{ChildList.TOKENS.path}, and its {use.notifications} change notifications (until purged) with one to "
        f"come per token take {use.notification_entries * NOTIFICATION_BYTES} bytes of {ChildList.TOKEN_CHANGES.path}"
    )
    if room_ms is not None:
        when = f"room is expected at {_iso(room_ms)}, when its oldest notifications are purged"
    else:
        when = (
            "room comes once its tokens are gone (expired, or swept after they expire) and their notifications purged"
        )
    return f"The write share of {principal} is {share} and is used up: {held}; {when}."


def _retry_after_s(now_ms: int, room_ms: int | None) -> int:
    if room_ms is None:
        return UNKNOWN_RETRY_AFTER_S
    return max(1, -(-(room_ms - now_ms) // 1000))


def _iso(epoch_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
