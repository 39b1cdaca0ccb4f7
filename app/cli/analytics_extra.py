"""The audit analytics commands need the ``analytics`` extra (pyspark, pyarrow, matplotlib, jinja2), which
``kts serve`` never loads: those commands import it when they run and say in one line when it is missing."""

from __future__ import annotations

import sys

from app.version import DISTRIBUTION

EXTRA_MODULES = frozenset({"pyspark", "py4j", "pyarrow", "matplotlib", "jinja2"})
INSTALL = f"pip install '{DISTRIBUTION}[analytics]' (from a checkout: pip install '.[analytics]')"


def missing_extra(command: str, error: ImportError) -> int:
    """Exit code 2 after one line on stderr, when ``error`` is a module of the extra; re-raises any other."""
    missing = (error.name or "").partition(".")[0]
    if missing not in EXTRA_MODULES:
        raise error
    print(f"kts: {command} needs the analytics extra ({missing} is not installed): {INSTALL}", file=sys.stderr)
    return 2
