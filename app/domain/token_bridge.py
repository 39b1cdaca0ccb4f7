"""Which token changes of a migration's dual-write phase the brokers still in ZooKeeper mode would never hear of,
so that kts writes the change notification Kafka's KRaft controller leaves out (docs/operations.md).

During dual-write (``Phase.MIGRATING``) the KRaft controller writes and deletes ``/delegation_token/tokens/<id>``
(``ZkDelegationTokenMigrationClient``) but writes no ``/delegation_token/token_changes`` notification, while
ZooKeeper-mode brokers learn of a token only from one. Every other writer (kts before the claim, a ZooKeeper-mode
broker) writes a notification with each change, after it or (kts) in the same transaction. So a change is
uncovered when no notification naming its token was created at or after the change's zxid, and it needs one when:

- it came after the migration began (its zxid above ``cutoff_zxid``, the creation of ``/migration``, which the
  KRaft controller writes before it claims the cluster): older changes were kts's or a broker's, notified;
- and its absence of a notification proves something: brokers delete notifications 15 minutes after their
  creation, so a change older than that (less a margin for clocks) may have had one that is gone. Such a change
  is left alone: a second notification would be harmless, but "once per change" is the rule.

Brokers care for a token's content, not for its znode: a write that leaves the content as the brokers already have it
needs no notification. The KRaft controller rewrites every token znode as it is at its claim (its first sync of
ZooKeeper with its log), which would otherwise cost a notification per token at once, more than brokers can list in a
large cluster. So the bridge looks already while the controller waits for the brokers (pre-migration, when every
change is notified by whoever makes it, so what it reads is what the brokers have) and compares each write's content
with the content seen at the previous look.

A deletion leaves no znode to read: it is seen as a token present at one look and absent at the next. Its zxid is
not known, only bounded: ``/delegation_token/tokens``'s ``pzxid`` (the zxid of the last change to its children), read
after the look, is at or after it. So a deletion needs a notification unless one naming the token was created after
that bound; one made between the deletion and the bound (a broker's, in the instant of the look) earns a second,
harmless notification, never a missing one. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from app.domain.capacity import NOTIFICATION_RETENTION_MS
from app.domain.cluster_migration import ClusterState, Phase
from app.domain.token import TokenInformation

# Leaves room for the clocks of the ZooKeeper servers (mtime) and of the brokers that purge (ctime) to differ.
CLOCK_MARGIN_MS: Final = 120_000


class ChangeKind(StrEnum):
    WRITTEN = "written"  # created or changed (a create, renew or expire with a period)
    DELETED = "deleted"  # an expire now, or the controller's sweep


@dataclass(frozen=True, slots=True)
class TokenVersion:
    """A token znode as read: the zxid and server time of its last change (its Stat), and its content (None when it
    cannot be read as Kafka writes it; brokers then drop the token)."""

    mzxid: int
    mtime_ms: int
    content: TokenInformation | None = None


@dataclass(frozen=True, slots=True)
class BridgedChange:
    token_id: str
    kind: ChangeKind
    zxid: int  # of the change (for a deletion: a bound at or after it); a notification after it covers it


def bridging(state: ClusterState) -> bool:
    """The bridge writes while a KRaft controller owns the metadata and a broker is still in ZooKeeper mode; it
    stops once none is left (``MIGRATED``)."""
    return state.phase is Phase.MIGRATING


def watching(state: ClusterState) -> bool:
    """The bridge looks (without writing) from the controller's provisioning on, to know what brokers have at the
    claim."""
    return state.phase in (Phase.PRE_MIGRATION, Phase.MIGRATING)


def uncovered_changes(
    *,
    previous: Mapping[str, TokenVersion],
    current: Mapping[str, TokenVersion],
    notified: Mapping[str, int],
    cutoff_zxid: int,
    listed_zxid: int,
    now_ms: int,
    retention_ms: int = NOTIFICATION_RETENTION_MS,
) -> list[BridgedChange]:
    """The changes between two looks at the token znodes that no notification covers and that need one.

    ``previous``: the tokens at the last look (empty at the first: deletions before it cannot be seen);
    ``current``: the tokens now; ``notified``: for each token id, the greatest creation zxid of the notifications
    naming it that exist now (a notification the bridge wrote counts as soon as it is listed); ``listed_zxid``: the
    token list's ``pzxid``, read after ``current``."""
    oldest_provable_ms = now_ms - max(0, retention_ms - CLOCK_MARGIN_MS)
    changes: list[BridgedChange] = []
    for token_id, version in current.items():
        if version.mzxid <= cutoff_zxid or version.mtime_ms < oldest_provable_ms:
            continue
        if notified.get(token_id, -1) >= version.mzxid:
            continue  # a notification made with the change or after it (kts's own are in the same transaction)
        seen = previous.get(token_id)
        if seen is not None and version.content is not None and seen.content == version.content:
            continue  # rewritten as it was: the brokers have this content already
        changes.append(BridgedChange(token_id, ChangeKind.WRITTEN, version.mzxid))
    for token_id in previous.keys() - current.keys():
        if notified.get(token_id, -1) > listed_zxid:
            continue  # a broker's, written after it deleted the token
        changes.append(BridgedChange(token_id, ChangeKind.DELETED, listed_zxid))
    changes.sort(key=lambda change: change.zxid)  # in the order they were made
    return changes
