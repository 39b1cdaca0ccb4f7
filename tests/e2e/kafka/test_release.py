"""Kafka's jars from Maven Central into the per-machine cache: once, under a lock, and a clear error without
Maven Central (a machine that cannot fetch them fails the broker tests with that line; it never skips them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.server.kafka_broker.release import ZOOKEEPER_MODE_RELEASE, KafkaUnavailable, fetch
from tests.e2e.conftest import ROOT

UNREACHABLE_MIRROR = """<settings><mirrors><mirror>
  <id>nowhere</id><mirrorOf>*</mirrorOf><url>http://127.0.0.1:9/maven2</url>
</mirror></mirrors></settings>
"""


def test_without_maven_central_the_fetch_fails_with_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty local repository and every repository mirrored to a closed port: Maven cannot get anything."""
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(UNREACHABLE_MIRROR)
    monkeypatch.setenv("MAVEN_OPTS", f"-Duser.home={home}")
    with pytest.raises(KafkaUnavailable) as refused:
        fetch(ZOOKEEPER_MODE_RELEASE, tmp_path / "cache")
    message = str(refused.value)
    print(message)
    assert message.startswith(f"could not fetch Kafka {ZOOKEEPER_MODE_RELEASE} from Maven Central")
    assert "\n" not in message
    assert not (tmp_path / "cache" / ZOOKEEPER_MODE_RELEASE / "libs").exists()


def test_an_unpinned_release_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KafkaUnavailable, match="not one of the pinned releases"):
        fetch("2.8.2", tmp_path)


def test_two_processes_fetching_at_once_share_one_copy(tmp_path: Path) -> None:
    """The lock: both get a complete classpath, and no half-made copy is left behind."""
    cache = tmp_path / "cache"
    script = (
        "import sys; from pathlib import Path; from app.cli.server.kafka_broker.release import fetch; "
        f"print(len(list(fetch({ZOOKEEPER_MODE_RELEASE!r}, Path(sys.argv[1])).libs.glob('*.jar'))))"
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(cache)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    counts = [int(worker.communicate(timeout=600)[0]) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert counts[0] == counts[1] > 90
    assert sorted(path.name for path in (cache / ZOOKEEPER_MODE_RELEASE).iterdir()) == ["libs", "pom.xml"]
