"""The JVM library (jvm/, docs/orchestrators.md) for the tests: ``build/kts-jvm.jar``, built by ``make jars``
when a source is newer than it (Make decides), so that running one test file builds it too; and Java programs of
the tests compiled against a Kafka release's jars plus the library."""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JAR = ROOT / "build" / "kts-jvm.jar"
BUILD_TIMEOUT_S = 900  # the first build fetches Maven's plugins and the provided jars


class JarBuildFailed(Exception):
    """``make jars`` failed; the message ends with its output."""


def build_jar() -> Path:
    """``build/kts-jvm.jar``, up to date with jvm/ (one build at a time per checkout)."""
    JAR.parent.mkdir(exist_ok=True)
    with (JAR.parent / ".kts-jvm.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["make", "--no-print-directory", "jars"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    if result.returncode != 0 or not JAR.exists():
        raise JarBuildFailed(f"make jars exited with {result.returncode}:\n{(result.stdout + result.stderr)[-4000:]}")
    return JAR


def compile_java(source: Path, classpath: str, classes: Path) -> Path:
    """``source`` compiled into ``classes`` (once) against ``classpath``; returns ``classes``."""
    compiled = classes / f"{source.stem}.class"
    if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-cp", classpath, "-d", str(classes), str(source)],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return classes
