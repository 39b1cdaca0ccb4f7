"""``kts lockout``'s output: account names (anyone's choice) never reach the terminal raw, a lock the store keeps
by key alone is shown by its key, and the audit's operating-system user has a stand-in where the uid has no name
(a container's arbitrary user)."""

from __future__ import annotations

import getpass
import os
import re

import pytest

from app.cli import lockout
from app.domain.lockout import LockInForce


def test_control_characters_in_a_name_are_escaped() -> None:
    assert lockout._shown("User:evil\x1b[2J\n\x00é") == "User:evil\\x1b[2J\\n\\x00é"


def test_a_lock_line_says_until_when() -> None:
    line = lockout._line(LockInForce("k" * 40, "User:alice", 61_500))
    assert re.fullmatch(r"User:alice\tuntil \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(62 s\)", line), line
    unnamed = lockout._line(LockInForce("k" * 40, None, 1_000))
    assert unnamed.startswith(f"(name not recorded) key {'k' * 40}\tuntil ")


def test_a_user_without_a_name_is_named_by_its_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    def nameless() -> str:
        raise KeyError("getpwuid(): uid not found: 10001")

    monkeypatch.setattr(getpass, "getuser", nameless)
    assert lockout._operator() == f"uid {os.getuid()}"
