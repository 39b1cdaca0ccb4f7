"""``/kts/lockouts``: the names of locks and releases, golden bytes of a lock's data, and names kts does not
write (an older version's locks) read as nothing."""

from __future__ import annotations

import pytest

from app.domain.lockout import account_key
from app.storage.zk.znodes import KtsZNodes
from app.storage.zk.znodes.kts import LockoutEntry, LockoutKind

KEY = account_key("User:alice")


def test_golden_names_and_data() -> None:
    assert KEY == "bd26178fddcf62e0002431f5a36fca06d634392c"  # SHA-256 of the UTF-8 name, 40 hex digits
    assert KtsZNodes.lockout_prefix(LockoutKind.LOCK, KEY, 900_000) == f"/kts/lockouts/lock-{KEY}-900000-"
    assert KtsZNodes.lockout_prefix(LockoutKind.RELEASE, KEY, 900_000) == f"/kts/lockouts/release-{KEY}-900000-"
    data = KtsZNodes.encode_lockout(account="User:al\x00ice", failures=5, locked_at_ms=1, service_id="kts-0")
    assert data == b'{"account":"User:al\\u0000ice","failures":5,"lockedAtMs":1,"serviceId":"kts-0"}'
    assert len(KtsZNodes.encode_lockout(account="User:" + "x" * 5000, failures=1, locked_at_ms=1, service_id="a")) < 400


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        (f"lock-{KEY}-900000-0000000007", LockoutEntry(LockoutKind.LOCK, KEY, 900_000)),
        (f"release-{KEY}-60000-0000000008", LockoutEntry(LockoutKind.RELEASE, KEY, 60_000)),
        ("User%3Aalice@1700000000000@0000000001", None),  # a lock of an older version
        (f"lock-{KEY}-900000", None),
        (f"lock-{KEY.upper()}-900000-0000000007", None),
        (f"unlock-{KEY}-900000-0000000007", None),
        (f"lock-{KEY}--0000000007", None),
    ],
)
def test_entries(name: str, entry: LockoutEntry | None) -> None:
    assert KtsZNodes.lockout_entry(name) == entry
