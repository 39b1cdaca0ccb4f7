"""The dev stacks' kept secrets (app/cli/server/kept_secret.py): made once, private to the owner, then read back
unchanged."""

from __future__ import annotations

import stat
from pathlib import Path

from app.cli.server.kept_secret import kept_secret


def test_a_secret_is_made_once_private_and_then_kept(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    first = kept_secret(path, 48)
    assert len(first) == 64  # 48 bytes, URL-safe base64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kept_secret(path, 48) == first
    assert kept_secret(path, 24) == first  # what is kept is kept, whatever length a caller would make


def test_a_secret_written_by_hand_is_read_without_its_line_end(tmp_path: Path) -> None:
    path = tmp_path / "password"
    path.write_text("chosen-by-hand\n")
    assert kept_secret(path, 24) == "chosen-by-hand"
