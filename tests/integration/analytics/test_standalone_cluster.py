"""The report on a real Spark cluster: a standalone master and worker started from pyspark's own launcher
(``bin/spark-class``) on loopback, and ``kts audit-report`` run through ``spark-submit --master
spark://...``, gives the same tables and the same page as ``local[2]``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pyspark
import pytest

from app.analytics.job import TABLES
from app.cli.audit_report import LOCAL_MASTER
from bench.audit_synth import synthesize

ROOT = Path(__file__).resolve().parents[3]
MONDAY = 1_767_571_200_000  # 2026-01-05T00:00:00Z
SPARK_HOME = Path(pyspark.__file__).parent  # a pip-installed pyspark is a whole Spark distribution
PROGRESS_LINE = re.compile(r"^ *\d+\.\d s  ")  # app.analytics.progress.PhaseLines


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment() -> dict[str, str]:
    """Ours, without a pyspark session's leftovers, with this checkout and this Python for the driver."""
    inherited = {name: value for name, value in os.environ.items() if not name.startswith(("PYSPARK_", "SPARK_"))}
    return inherited | {
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


class StandaloneCluster:
    """A master and one worker, each a foreground ``spark-class`` process of this test."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port, self.ui_port, self.worker_ui_port = free_port(), free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, *argv: str) -> None:
        log = (self.directory / f"{name}.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment() | {"SPARK_HOME": str(SPARK_HOME)},
                cwd=self.directory,
            )
        )
        log.close()

    def start(self) -> None:
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port),
        )  # fmt: skip
        self._start(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            self.url,
            "--host", "127.0.0.1", "--cores", "2", "--memory", "1g",
            "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.directory / "work"),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if any(process.poll() is not None for process in self.processes):
                raise AssertionError(f"a Spark daemon exited: {self.log('master')}\n{self.log('worker')}")
            try:
                state = httpx.get(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2).json()
                if state.get("aliveworkers") == 1:
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"no worker registered within 120 s: {self.log('worker')}")

    def log(self, name: str) -> str:
        return (self.directory / f"{name}.log").read_text(encoding="utf-8", errors="replace")[-3000:]

    def stop(self) -> None:
        for process in reversed(self.processes):  # the worker first: it ends its executors
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    spark_cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        spark_cluster.start()
        yield spark_cluster
    finally:
        spark_cluster.stop()


def report(events: Path, out: Path, *, submit_to: str | None) -> subprocess.CompletedProcess[str]:
    script = str(ROOT / "app" / "cli" / "audit_report.py")
    arguments = ["--input", str(events), "--out", str(out), "--top", "5"]
    if submit_to is None:
        command = [sys.executable, script, *arguments, "--master", "local[2]"]
    else:
        command = [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master", submit_to,
            "--conf", "spark.executor.memory=512m",
            "--conf", "spark.driver.host=127.0.0.1",
            script, *arguments,
        ]  # fmt: skip
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=480,
        cwd=ROOT,
        env=environment() | {"SPARK_HOME": str(SPARK_HOME)},
        check=False,
    )


def table_rows(directory: Path) -> list[tuple[Any, ...]]:
    table = pq.read_table(directory)
    return sorted((tuple(row.values()) for row in table.to_pylist()), key=repr)


@pytest.mark.timeout(900)
def test_the_report_on_a_standalone_cluster_matches_local(cluster: StandaloneCluster, tmp_path: Path) -> None:
    events = tmp_path / "events"
    synthesize(events, events=20_000, days=3, seed=5, start_ms=MONDAY)

    on_cluster = report(events, tmp_path / "cluster", submit_to=cluster.url)
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:] + cluster.log("worker")
    local = report(events, tmp_path / "local", submit_to=None)
    assert local.returncode == 0, local.stderr[-3000:]

    # spark-submit's PythonRunner merges the driver's stderr into its stdout: the progress lines come first.
    progress = [line for line in on_cluster.stdout.splitlines() if PROGRESS_LINE.match(line)]
    assert any(line.endswith(f"ready on {cluster.url}") for line in progress)  # spark-submit's master
    results = [line for line in on_cluster.stdout.splitlines() if not PROGRESS_LINE.match(line)]
    assert "\n".join(results).replace("/cluster/", "/local/") + "\n" == local.stdout
    assert f"ready on {LOCAL_MASTER}" in local.stderr
    for name in TABLES:
        assert table_rows(tmp_path / "cluster" / name) == table_rows(tmp_path / "local" / name), name
    page = (tmp_path / "cluster" / "report.html").read_bytes()
    assert page == (tmp_path / "local" / "report.html").read_bytes()
    assert list((tmp_path / "cluster" / "token_lifecycle").glob("*.parquet"))
    assert "app-" in cluster.log("master")  # the master really ran an application
