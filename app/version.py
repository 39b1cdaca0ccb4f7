"""The installed kts version, as the package metadata says (``/healthz``, ``kts_build_info``, ``--version``)."""

from __future__ import annotations

import platform
from functools import cache
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "kts-kafka"  # pyproject.toml's project name (the command is `kts`)


@cache
def kts_version() -> str:
    """The version of the installed ``kts-kafka`` distribution; ``unknown`` when run from a tree never installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def python_version() -> str:
    return platform.python_version()
