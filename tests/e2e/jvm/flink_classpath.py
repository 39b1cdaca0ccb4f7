"""A Flink job's classpath (a MiniCluster, the DataStream API, flink-connector-kafka and its kafka-clients), copied
once per machine from Maven Central into a cache outside the checkout, as the Kafka brokers' jars are
(app/cli/server/kafka_broker/release.py): ``flink/pom.xml`` beside this module names it, Maven's
copy-dependencies copies it into ``$XDG_CACHE_HOME/kts-flink/<digest of the pom>/libs``, a file lock keeps
parallel test processes from fetching at once, and a marker written last says the copy is complete."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Final

from app.cli.server.kafka_broker.release import DEPENDENCY_PLUGIN, KafkaUnavailable, cache_root, require_tools

POM: Final = Path(__file__).parent / "flink" / "pom.xml"
_COMPLETE: Final = ".complete"


def flink_libs(cache: Path | None = None) -> Path:
    """The directory of the job's jars (``java -cp '<dir>/*'``), fetched on first use. Raises KafkaUnavailable
    (Maven or Maven Central out of reach), which fails the test with one line."""
    pom = POM.read_text(encoding="utf-8")
    digest = hashlib.sha256(pom.encode()).hexdigest()
    root = (cache or cache_root().with_name("kts-flink")) / digest[:16]
    libs = root / "libs"
    if _complete(libs, digest):
        return libs
    require_tools("java", "mvn")
    root.mkdir(parents=True, exist_ok=True)
    with (root / "fetch.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be fetching: wait for it
        if not _complete(libs, digest):
            _copy_dependencies(root, pom)
            (libs / _COMPLETE).write_text(digest + "\n")
    return libs


def _complete(libs: Path, digest: str) -> bool:
    marker = libs / _COMPLETE
    return marker.is_file() and marker.read_text().strip() == digest


def _copy_dependencies(root: Path, pom: str) -> None:
    staging = root / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    (root / "pom.xml").write_text(pom, encoding="utf-8")
    command = ["mvn", "-B", "-q", "-f", str(root / "pom.xml"), DEPENDENCY_PLUGIN, "-DincludeScope=runtime"]
    result = subprocess.run(
        [*command, f"-DoutputDirectory={staging}"], capture_output=True, text=True, timeout=900, check=False
    )
    if result.returncode != 0 or not any(staging.glob("flink-connector-kafka-*.jar")):
        raise KafkaUnavailable(
            f"could not fetch Flink's jars from Maven Central (mvn exited with {result.returncode}): "
            f"{(result.stdout + result.stderr).strip()[-400:]}"
        )
    libs = root / "libs"
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
