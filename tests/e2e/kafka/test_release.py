"""Kafka's jars from Maven Central into the per-machine cache: once, under a lock. (Without Maven Central: one
clear line, tests/e2e/kafka/test_kts_dev_kafka.py; the fixtures fail every broker test with it, never skip.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.server.kafka_broker.release import ZOOKEEPER_MODE_RELEASE, KafkaUnavailable, fetch
from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.kafka


def test_a_release_not_in_the_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KafkaUnavailable, match="not one of the releases kts runs"):
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
