"""The analytics extra stays out of the service: ``kts --help``, ``kts serve`` and the app never import
pyspark, pyarrow, matplotlib or jinja2; without the extra, the analytics commands say so in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.analytics_extra import EXTRA_MODULES

ROOT = Path(__file__).resolve().parents[3]
# Python refuses to import a module whose sys.modules entry is None: as if it were not installed.
HIDE_THE_EXTRA = f"import sys; sys.modules.update(dict.fromkeys({sorted(EXTRA_MODULES)!r}))\n"
RUN_KTS = "import runpy; sys.argv[0] = 'kts'; runpy.run_module('app.cli.main', run_name='__main__')"


def python(*argv: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("KTS_", "PYSPARK_"))}
    return subprocess.run(
        [sys.executable, *argv] if not prelude else [sys.executable, "-c", prelude, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=environment | {"PYTHONPATH": str(ROOT)},
        check=False,
    )


def imported(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules in Python's own import log (-X importtime): one line per module, its dotted name last."""
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[-1].strip() for line in lines[1:]}


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "app.cli.main", "--help"],
        ["-m", "app.cli.main", "serve"],  # fails on the missing zookeeper.connect, after the serve imports
        ["-c", "from app.main import create_app; create_app()"],
    ],
)
def test_the_service_side_never_imports_the_extra(argv: list[str]) -> None:
    modules = imported(python("-X", "importtime", *argv))

    assert {"app.cli.audit_report", "app.main"} & modules  # the log was read
    assert {module for module in modules if module.partition(".")[0] in EXTRA_MODULES} == set()


@pytest.mark.parametrize(
    "argv",
    [
        ["audit-report", "--input", "events", "--out", "report"],
        ["audit-export", "--db", "sqlite:///audit.db", "--out", "events"],
    ],
)
def test_without_the_extra_the_commands_say_what_to_install(argv: list[str]) -> None:
    done = python(*argv, prelude=HIDE_THE_EXTRA + RUN_KTS)

    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"kts: {argv[0]} needs the analytics extra (")
    assert done.stderr.rstrip().endswith(
        "pip install 'kts-kafka[analytics]' (from a checkout: pip install '.[analytics]')"
    )
