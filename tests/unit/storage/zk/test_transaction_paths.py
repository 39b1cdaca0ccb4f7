"""ChangeTransaction's request paths are the ones kazoo's builder methods would send, whatever the chroot."""

from __future__ import annotations

import pytest
from kazoo.protocol.paths import _prefix_root

from app.storage.zk.transaction import request_path


@pytest.mark.parametrize("chroot", ["", "/kafka", "/a/b", "/kafka/", "//x", "/."])
@pytest.mark.parametrize(
    "path",
    [
        "/delegation_token/tokens/Abc-_123",
        "/delegation_token/token_changes/token_change_",
        "/",
        "/a//b",
        "/a/./b",
        "/a/../b",
        "/a/",
        "/.hidden",
        "relative/path",
        "/kts/audit_intent_batch-1-2",
    ],
)
def test_request_path_is_kazoos_prefixed_path(chroot: str, path: str) -> None:
    try:
        expected = _prefix_root(chroot, path)
    except ValueError:
        with pytest.raises(ValueError):
            request_path(chroot, path)
        return
    assert request_path(chroot, path) == expected
