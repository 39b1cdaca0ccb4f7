"""build/kts-jvm.jar, built once per test session (``make jars``)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


@functools.cache
def kts_jvm_jar() -> Path:
    result = subprocess.run(["make", "jars"], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return ROOT / "build" / "kts-jvm.jar"
