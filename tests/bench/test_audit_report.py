"""``bench.audit_report``'s command line: the ceiling's child mode needs the events it is to scan."""

from __future__ import annotations

import sys

import pytest

from bench import audit_report


def test_ceiling_only_needs_the_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["audit_report", "--ceiling-only"])
    with pytest.raises(SystemExit) as exit_:
        audit_report.main()
    assert exit_.value.code == 2
    assert "--ceiling-only needs --input" in capsys.readouterr().err
