"""kts's own znodes, under ``/kts``: no broker or Kafka tool reads them."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from app.domain.principal import KafkaPrincipal
from app.domain.secret_fingerprint import SecretFingerprint
from app.domain.token_quota import QuotaKey
from app.domain.token_share import ShareLedger
from app.storage.zk.sanitizer import sanitize
from app.storage.zk.znodes.malformed import MalformedZNode

_HEX_KEY = re.compile(r"[0-9a-f]{16,64}")
LOCKOUT_ACCOUNT_CHARS = 256


class LockoutKind(StrEnum):
    LOCK = "lock"
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class LockoutEntry:
    """A child of ``/kts/lockouts``: a lock of the account kept under ``key``, or a release of it, lasting
    ``duration_ms`` from the znode's creation time (ZooKeeper's clock)."""

    kind: LockoutKind
    key: str
    duration_ms: int


class KtsZNodes:
    """- ``/kts/audit-intents/<event id>``: an empty marker saying a change's audit event was written as
      pending. It is created in the same transaction as the change, so its presence proves the change
      happened (app/service/audit.py).
    - ``/kts/audit-intents/<first event id>-<last event id>``: the marker of a batch of changes made in one
      transaction (the sweep's and bulk revocation's deletions), one for all their events: the data is the
      events' ids, as a JSON array in ascending order (``encode_intent_batch``), the first and last of which name
      it. The ids need not be consecutive (PostgreSQL hands ids out to several replicas at once).
    - ``/kts/sweeper-election``: the election of the replica that sweeps expired tokens (kazoo's Election
      recipe creates and names the contenders' znodes below it). Every live replica contends, so the
      contenders are also the count of live replicas (the lockout's share).
    - ``/kts/token-quotas/owner/<principal>`` and ``/kts/token-quotas/requester/<principal>`` (the principal
      sanitized as Kafka sanitizes user names): empty guards whose znode version counts the creates charged
      to that quota. Each create sets its guards' data, guarded by the versions the replica counted at, in
      the transaction that creates the token, so two replicas cannot both take the last unit of a quota
      (app/service/token_quotas.py). One small znode per principal that ever created a token.
    - ``/kts/token-shares/<principal>`` (the principal sanitized as Kafka sanitizes user names): the share
      ledger of a principal that is held to a share (``ShareLedgerZNode``): the notifications its writes caused,
      per minute. Each token write charged to it sets it, guarded by the version read, in the transaction that
      writes the token, so the count is exact across replicas (app/storage/zk/token_shares.py). One small znode
      per principal that ever wrote a token, never deleted: its version only grows, which replicas rely on.
    - ``/kts/secret-key-fingerprint``: the keyed fingerprint of the cluster's secret key
      (``SecretFingerprintZNode``).
    - ``/kts/lockouts/lock-<account key>-<duration ms>-<sequence>``: a per-account lock, shared by the replica
      whose failed-login count reached its share (app/domain/lockout.py). It lasts ``duration ms`` from the
      znode's creation time (``ctime``, ZooKeeper's clock: no replica's clock decides when a lock ends). The
      key is 40 hex digits of the SHA-256 of the whole account name (``account_key``), so every name is as
      short and names sharing a prefix never share a lock. The data, for operators, is JSON
      ``{"account", "failures", "lockedAtMs", "serviceId"}``. The sequence makes every lock a new znode: a lock
      is never changed, only deleted (by a super user's unlock, or by the leader once it has ended).
    - ``/kts/lockouts/release-<account key>-<duration ms>-<sequence>``: a super user unlocked the account; every
      replica that sees it forgets its own count and lock of the account (one it could not share). The leader
      deletes it once ``duration ms`` have passed, when no lock it releases can still be in force.
    - ``/kts/lockouts`` itself: its data is rewritten (empty) to read ZooKeeper's clock, from the ``mtime`` the
      write answers."""

    ROOT: Final = "/kts"
    AUDIT_INTENTS: Final = f"{ROOT}/audit-intents"
    SWEEPER_ELECTION: Final = f"{ROOT}/sweeper-election"
    SECRET_FINGERPRINT: Final = f"{ROOT}/secret-key-fingerprint"
    TOKEN_QUOTAS: Final = f"{ROOT}/token-quotas"
    OWNER_QUOTAS: Final = f"{TOKEN_QUOTAS}/owner"
    REQUESTER_QUOTAS: Final = f"{TOKEN_QUOTAS}/requester"
    TOKEN_SHARES: Final = f"{ROOT}/token-shares"
    LOCKOUTS: Final = f"{ROOT}/lockouts"

    @staticmethod
    def quota_guard(key: QuotaKey) -> str:
        return f"{KtsZNodes.TOKEN_QUOTAS}/{key.kind.value}/{sanitize(str(key.principal))}"

    @staticmethod
    def share_ledger(principal: KafkaPrincipal) -> str:
        return f"{KtsZNodes.TOKEN_SHARES}/{sanitize(str(principal))}"

    @staticmethod
    def lockout_prefix(kind: LockoutKind, key: str, duration_ms: int) -> str:
        """Create with ``sequence=True``: ZooKeeper appends the sequence number."""
        return f"{KtsZNodes.LOCKOUTS}/{kind.value}-{key}-{duration_ms}-"

    @staticmethod
    def lockout_entry(name: str) -> LockoutEntry | None:
        """What a child of ``/kts/lockouts`` is; None: not one kts writes (a lock of an older version)."""
        parts = name.split("-")
        if len(parts) != 4 or not _HEX_KEY.fullmatch(parts[1]) or not parts[2].isdigit() or not parts[3].isdigit():
            return None
        try:
            kind = LockoutKind(parts[0])
        except ValueError:
            return None
        return LockoutEntry(kind, parts[1], int(parts[2]))

    @staticmethod
    def encode_lockout(*, account: str, failures: int, locked_at_ms: int, service_id: str) -> bytes:
        """A lock's data, for operators only (no replica reads it): the account (its first
        ``LOCKOUT_ACCOUNT_CHARS`` characters), the failures counted and the publishing replica's clock."""
        document = {
            "account": account[:LOCKOUT_ACCOUNT_CHARS],
            "failures": failures,
            "lockedAtMs": locked_at_ms,
            "serviceId": service_id,
        }
        return json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode()

    @staticmethod
    def lockout_account(data: bytes) -> str | None:
        """The account a lock's data names (``encode_lockout``); None when the data is not such a document."""
        try:
            document = json.loads(data)
        except ValueError:
            return None
        account = document.get("account") if isinstance(document, dict) else None
        return account if isinstance(account, str) else None

    @staticmethod
    def audit_intent(event_id: int) -> str:
        return f"{KtsZNodes.AUDIT_INTENTS}/{event_id}"

    @staticmethod
    def audit_intent_event_id(name: str) -> int | None:
        """The event id an intent marker's znode name holds (None: not a single event's marker)."""
        return int(name) if name.isdigit() else None

    @staticmethod
    def audit_intent_batch(event_ids: Sequence[int]) -> str:
        """The marker of a batch of (at least two) events: named by its first and last event ids."""
        return f"{KtsZNodes.AUDIT_INTENTS}/{min(event_ids)}-{max(event_ids)}"

    @staticmethod
    def audit_intent_batch_range(name: str) -> tuple[int, int] | None:
        """The first and last event ids a batch marker's znode name holds (None: not a batch's marker)."""
        first, dash, last = name.partition("-")
        if not dash or not first.isdigit() or not last.isdigit():
            return None
        return int(first), int(last)

    @staticmethod
    def encode_intent_batch(event_ids: Sequence[int]) -> bytes:
        return json.dumps(sorted(event_ids), separators=(",", ":")).encode("ascii")

    @staticmethod
    def decode_intent_batch(data: bytes) -> list[int]:
        """A batch marker's event ids; MalformedZNode when the data is not such a list."""
        try:
            event_ids = json.loads(data)
        except ValueError as exc:
            raise MalformedZNode("an audit intent batch marker's data is not JSON") from exc
        if not isinstance(event_ids, list) or not all(type(event_id) is int for event_id in event_ids):
            raise MalformedZNode("an audit intent batch marker's data is not a list of event ids")
        return event_ids


class SecretFingerprintZNode:
    """``/kts/secret-key-fingerprint``: ``{"version":1,"algorithm":"HMAC-SHA256","salt":"<base64>",
    "fingerprint":"<base64>"}`` (app/domain/secret_fingerprint.py). Never the secret."""

    PATH: Final = KtsZNodes.SECRET_FINGERPRINT
    VERSION: Final = 1
    ALGORITHM: Final = "HMAC-SHA256"

    @staticmethod
    def encode(fingerprint: SecretFingerprint) -> bytes:
        doc = {
            "version": SecretFingerprintZNode.VERSION,
            "algorithm": SecretFingerprintZNode.ALGORITHM,
            "salt": base64.b64encode(fingerprint.salt).decode("ascii"),
            "fingerprint": base64.b64encode(fingerprint.digest).decode("ascii"),
        }
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> SecretFingerprint:
        try:
            doc = json.loads(data.decode("utf-8"))
            if doc["version"] != SecretFingerprintZNode.VERSION or doc["algorithm"] != SecretFingerprintZNode.ALGORITHM:
                raise MalformedZNode("secret key fingerprint of an unknown version or algorithm")
            salt = base64.b64decode(doc["salt"], validate=True)
            digest = base64.b64decode(doc["fingerprint"], validate=True)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, binascii.Error) as exc:
            raise MalformedZNode("secret key fingerprint znode is not the JSON kts writes") from exc
        if not salt or len(digest) != 32:
            raise MalformedZNode("secret key fingerprint znode holds no salt or a digest of the wrong length")
        return SecretFingerprint(salt, digest)


class ShareLedgerZNode:
    """``/kts/token-shares/<principal>``: ``{"version":1,"notifications":[[<minute start, epoch ms>,<count>],...]}``,
    oldest minute first (app/domain/token_share.py). At most 17 minutes: a ledger stays under 500 bytes."""

    VERSION: Final = 1

    @staticmethod
    def path(principal: KafkaPrincipal) -> str:
        return KtsZNodes.share_ledger(principal)

    @staticmethod
    def encode(ledger: ShareLedger) -> bytes:
        doc = {"version": ShareLedgerZNode.VERSION, "notifications": [list(minute) for minute in ledger.minutes]}
        return json.dumps(doc, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> ShareLedger:
        try:
            doc = json.loads(data.decode("utf-8"))
            version = doc["version"]
            minutes = tuple((int(minute), int(count)) for minute, count in doc["notifications"])
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise MalformedZNode("share ledger znode is not the JSON kts writes") from exc
        if version != ShareLedgerZNode.VERSION:
            raise MalformedZNode("share ledger of an unknown version")
        if any(count < 0 for _, count in minutes) or list(minutes) != sorted(minutes):
            raise MalformedZNode("share ledger znode holds negative counts or minutes out of order")
        return ShareLedger(minutes)
