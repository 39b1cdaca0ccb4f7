"""An Apache Kafka release's jars, copied once per machine from Maven Central into a cache outside the checkout.

Apache Kafka publishes its broker (``org.apache.kafka:kafka_2.13``) and tools (``kafka-tools``) to Maven
Central; ``pom.xml`` beside this module names the pinned releases. Maven copies a release's runtime
classpath into ``$XDG_CACHE_HOME/kts-kafka/<version>/libs`` (``~/.cache`` by default), where every broker
and tool of that release runs from (``java -cp 'libs/*'``). A file lock keeps parallel processes (test
workers, two ``kts dev``) from fetching at once; a marker written last, holding a digest of the pom, says
the copy is complete and made from this pom (a changed pom is fetched again).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

ZOOKEEPER_MODE_RELEASE: Final = "3.9.1"  # the last release with ZooKeeper mode
KRAFT_RELEASE: Final = "4.4.0"
PINNED_RELEASES: Final = (ZOOKEEPER_MODE_RELEASE, KRAFT_RELEASE)  # each a profile of pom.xml
DEPENDENCY_PLUGIN: Final = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
_COMPLETE: Final = ".complete"
_ANSI: Final = re.compile(r"\x1b\[[0-9;]*m")


class KafkaUnavailable(RuntimeError):
    """Kafka's jars cannot be had here: no Java or Maven, or Maven Central out of reach. One clear line."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kts-kafka"


def pom_text() -> str:
    return resources.files(__package__).joinpath("pom.xml").read_text(encoding="utf-8")


@dataclass(frozen=True)
class KafkaRelease:
    """A release whose jars are in the cache: ``classpath`` for ``java -cp``."""

    version: str
    libs: Path

    @property
    def classpath(self) -> str:
        return f"{self.libs}/*"

    @property
    def zookeeper_mode(self) -> bool:
        """3.x brokers run in ZooKeeper mode; 4.0 removed it."""
        return int(self.version.split(".", 1)[0]) < 4

    def main_class(self, tool: str) -> str:
        """A tool's class: ``AclCommand`` and ``ConfigCommand`` moved from Scala (``kafka.admin``) to Java
        (``org.apache.kafka.tools``) in 4.0; the others are Java classes in both."""
        if tool in ("AclCommand", "ConfigCommand") and self.zookeeper_mode:
            return f"kafka.admin.{tool}"
        if tool == "StorageTool":
            return "kafka.tools.StorageTool"
        return f"org.apache.kafka.tools.{tool}"


def require_tools(*commands: str) -> None:
    missing = [command for command in commands if shutil.which(command) is None]
    if missing:
        raise KafkaUnavailable(
            f"running a Kafka broker needs {' and '.join(missing)}: install a JDK and Maven "
            "(apt-get install default-jdk-headless maven; make deps does)"
        )


def is_cached(version: str, cache: Path | None = None) -> bool:
    """Whether ``fetch`` has the release already (no Maven run, no download)."""
    digest = hashlib.sha256(pom_text().encode()).hexdigest()
    return _complete((cache or cache_root()) / version / "libs", digest)


def fetch(version: str, cache: Path | None = None) -> KafkaRelease:
    """The release's jars, copied with Maven on first use. Raises KafkaUnavailable."""
    if version not in PINNED_RELEASES:
        raise KafkaUnavailable(f"Kafka {version} is not one of the pinned releases {', '.join(PINNED_RELEASES)}")
    root = cache or cache_root()
    libs = copy_runtime_classpath(
        pom_text(), root / version, {"kafka.version": version}, expect="kafka_2.13-*.jar", what=f"Kafka {version}"
    )
    return KafkaRelease(version, libs)


def copy_runtime_classpath(pom: str, home: Path, properties: dict[str, str], *, expect: str, what: str) -> Path:
    """``home/libs``: the runtime classpath of ``pom`` (with ``-Dkey=value`` properties) that Maven copies there
    on first use; ``expect`` is a jar name pattern the copy must hold. Other jar sets the tests need from Maven
    Central (Spark's Kafka connector) use it too. Raises KafkaUnavailable naming ``what``."""
    libs = home / "libs"
    digest = hashlib.sha256(pom.encode()).hexdigest()
    if _complete(libs, digest):
        return libs
    require_tools("java", "mvn")
    home.mkdir(parents=True, exist_ok=True)
    with (home.parent / f"{home.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be fetching these jars: wait for it
        if not _complete(libs, digest):
            _copy_dependencies(home, pom, properties, expect, what)
            (libs / _COMPLETE).write_text(digest + "\n")
    return libs


def _complete(libs: Path, digest: str) -> bool:
    marker = libs / _COMPLETE
    return marker.is_file() and marker.read_text().strip() == digest


def _copy_dependencies(home: Path, pom: str, properties: dict[str, str], expect: str, what: str) -> None:
    """Copy into a fresh directory, then swap it in: a half-done copy never looks like a release."""
    staging = home / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    pom_file = home / "pom.xml"
    pom_file.write_text(pom, encoding="utf-8")
    command = [
        "mvn",
        "-B",
        "-q",
        "-Dstyle.color=never",
        "-f",
        str(pom_file),
        *(f"-D{key}={value}" for key, value in properties.items()),
        DEPENDENCY_PLUGIN,
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)  # noqa: S603
    except subprocess.TimeoutExpired as exc:
        raise KafkaUnavailable(f"fetching {what} with Maven took more than 15 minutes") from exc
    if result.returncode != 0 or not any(staging.glob(expect)):
        raise KafkaUnavailable(
            f"could not fetch {what} from Maven Central (mvn exited with {result.returncode}; "
            f"is the repository reachable from here?): {_first_error(result.stdout + result.stderr)}"
        )
    libs = home / "libs"
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)


def _first_error(output: str) -> str:
    """Maven's first [ERROR] line (the cause; the rest is advice), without colours."""
    lines = [_ANSI.sub("", line).strip() for line in output.splitlines()]
    errors = [line.removesuffix(" -> [Help 1]") for line in lines if line.startswith(("[ERROR] ", "[FATAL] "))]
    first = (errors or [line for line in lines if line] or ["no output"])[0]
    return first if len(first) <= 400 else first[:400] + "..."
