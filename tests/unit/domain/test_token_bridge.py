"""Which token changes of a migration's dual-write the bridge announces (app/domain/token_bridge.py)."""

from __future__ import annotations

from app.domain.capacity import NOTIFICATION_RETENTION_MS
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_bridge import BridgedChange, ChangeKind, TokenVersion, uncovered_changes

NOW = 1_800_000_000_000
CUTOFF = 100


def _changes(
    current: dict[str, TokenVersion],
    notified: dict[str, int],
    previous: dict[str, TokenVersion] | None = None,
    listed_zxid: int = 1000,
) -> list[BridgedChange]:
    return uncovered_changes(
        previous=previous or {},
        current=current,
        notified=notified,
        cutoff_zxid=CUTOFF,
        now_ms=NOW,
        listed_zxid=listed_zxid,
    )


def test_a_controller_write_without_a_notification_needs_one() -> None:
    assert _changes({"a": TokenVersion(200, NOW)}, {}) == [BridgedChange("a", ChangeKind.WRITTEN, 200)]


def test_a_notification_in_the_same_transaction_or_after_covers_a_write_but_an_older_one_does_not() -> None:
    assert _changes({"a": TokenVersion(200, NOW)}, {"a": 200}) == []  # kts's multi-op: one zxid
    assert _changes({"a": TokenVersion(200, NOW)}, {"a": 201}) == []  # a broker's, written after
    assert _changes({"a": TokenVersion(200, NOW)}, {"a": 150}) == [BridgedChange("a", ChangeKind.WRITTEN, 200)]


def test_changes_before_the_migration_began_or_too_old_to_judge_are_left_alone() -> None:
    assert _changes({"a": TokenVersion(CUTOFF, NOW)}, {}) == []
    old = NOW - NOTIFICATION_RETENTION_MS  # its notification may have been purged by the brokers
    assert _changes({"a": TokenVersion(200, old)}, {}) == []


def test_a_deletion_needs_a_notification_made_after_it_not_the_one_of_the_creation() -> None:
    before = {"a": TokenVersion(200, NOW)}
    assert _changes({}, {"a": 200}, previous=before, listed_zxid=300) == [BridgedChange("a", ChangeKind.DELETED, 300)]
    assert _changes({}, {"a": 301}, previous=before, listed_zxid=300) == []  # a broker's expire


def test_changes_come_in_the_order_they_were_made() -> None:
    current = {"b": TokenVersion(250, NOW), "a": TokenVersion(220, NOW)}
    previous = {"c": TokenVersion(210, NOW)} | current
    kinds = [(change.token_id, change.kind) for change in _changes(current, {}, previous=previous, listed_zxid=260)]
    assert kinds == [("a", ChangeKind.WRITTEN), ("b", ChangeKind.WRITTEN), ("c", ChangeKind.DELETED)]


def test_a_rewrite_that_leaves_the_content_as_it_was_needs_none_but_a_changed_content_does() -> None:
    alice = KafkaPrincipal.user("alice")
    token = TokenInformation("a", alice, alice, (), NOW, NOW + 1, NOW + 2)
    previous = {"a": TokenVersion(50, NOW, token)}  # seen before the claim, as brokers have it
    assert _changes({"a": TokenVersion(200, NOW, token)}, {}, previous=previous) == []
    renewed = token.with_expiry(NOW + 2)
    assert _changes({"a": TokenVersion(200, NOW, renewed)}, {}, previous=previous) == [
        BridgedChange("a", ChangeKind.WRITTEN, 200)
    ]
    # Unreadable now: brokers drop it on a notification, so one is due.
    assert _changes({"a": TokenVersion(200, NOW, None)}, {}, previous=previous) == [
        BridgedChange("a", ChangeKind.WRITTEN, 200)
    ]
