"""Real ``kts`` processes, started as a user would start them."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

KTS = [sys.executable, "-m", "app.cli.main"]
ROOT = Path(__file__).resolve().parents[2]


def kts_env(**extra: str) -> dict[str, str]:
    """The environment of a kts process: none of the caller's KTS_* settings, an audit database of its own."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("KTS_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["KTS_AUDIT_DB_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='kts-audit-')}/audit.db"
    env.update(extra)
    return env


def wait_ready(url: str, process: subprocess.Popen[str], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"kts exited early with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not become ready")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


def start_kts(
    processes: list[subprocess.Popen[str]], log_dir: Path, name: str, *, port: int | None = None, **settings: str
) -> str:
    """Start one ``kts serve`` replica with KTS_* settings; returns its URL once it is ready. ``port``: a
    given one (a restart takes the same port again), else a free one. The log is appended to."""
    from app.cli.server.embedded_zookeeper import free_port

    port = port or free_port()
    env = kts_env(KTS_HTTP_LISTENERS=f"http://127.0.0.1:{port}", KTS_SERVICE_ID=name, **settings)
    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=env,
        stdout=(log_dir / f"{name}.log").open("a"),
        stderr=subprocess.STDOUT,
        text=True,
    )
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, process, timeout_s=60)
    return url
