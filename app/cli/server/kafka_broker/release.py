"""An Apache Kafka release's jars, copied once per machine from Maven Central into a cache outside the checkout.

Apache Kafka publishes its broker (``org.apache.kafka:kafka_2.13``) and tools (``kafka-tools``) to Maven
Central; ``RELEASES`` below lists the releases kts runs (the newest patch of each minor line; adding one is
one line), ``pom.xml`` beside this module names the artifacts. Maven copies a release's runtime
classpath into ``$XDG_CACHE_HOME/kts-kafka/<version>/libs`` (``~/.cache`` by default), where every broker
and tool of that release runs from (``java -cp 'libs/*'``). A file lock keeps parallel processes (test
workers, two ``kts dev``) from fetching at once; a marker written last, holding a digest of the pom, says
the copy is complete and made from this pom (a changed pom is fetched again).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

from app.cli.server.kafka_broker.tools import tool_named

# The newest patch of every minor line kts is proven on (make test-kafka-matrix; docs/kafka-compatibility.md),
# oldest first. 3.x run in ZooKeeper mode, 4.x in KRaft (4.0 removed ZooKeeper mode). Older than 3.3 stay out.
RELEASES: Final = (
    "3.3.2",
    "3.4.1",
    "3.5.2",
    "3.6.2",
    "3.7.2",
    "3.8.1",
    "3.9.2",
    "4.0.2",
    "4.1.2",
    "4.2.2",
    "4.3.1",
    "4.4.0",
)
PINNED_RELEASES: Final = RELEASES


def _is_zookeeper_mode(version: str) -> bool:
    return int(version.split(".", 1)[0]) < 4


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


# What make test runs: the newest release of each mode (3.9 is the last with ZooKeeper mode).
ZOOKEEPER_MODE_RELEASE: Final = max((v for v in RELEASES if _is_zookeeper_mode(v)), key=_key)
KRAFT_RELEASE: Final = max((v for v in RELEASES if not _is_zookeeper_mode(v)), key=_key)
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
        return _is_zookeeper_mode(self.version)

    def main_class(self, tool: str) -> str:
        """A tool's class in this release, by script or class name (``acls``, ``AclCommand``): the first of its
        classes (``tools.py``, newest first) that the release's own jars hold, since the Scala tools moved to
        Java release by release (DelegationTokenCommand in 3.5, AclCommand in 4.0, ConfigCommand in 4.4)."""
        candidates = tool_named(tool).classes
        classes = _classes(self.libs)
        return next((name for name in candidates if name in classes), candidates[0])


@functools.cache
def _classes(libs: Path) -> frozenset[str]:
    """The top-level classes in a release's Kafka jars (their names only; read once per process)."""
    names: set[str] = set()
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as archive:
            names.update(
                entry[: -len(".class")].replace("/", ".")
                for entry in archive.namelist()
                if entry.endswith(".class") and "$" not in entry
            )
    return frozenset(names)


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
        raise KafkaUnavailable(f"Kafka {version} is not one of the releases kts runs: {', '.join(PINNED_RELEASES)}")
    root = cache or cache_root()
    libs = copy_runtime_classpath(
        pom_text(),
        root / version,
        {"kafka.version": version, "kafka.logging": "reload4j" if _is_zookeeper_mode(version) else "log4j2"},
        expect="kafka_2.13-*.jar",
        what=f"Kafka {version}",
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
