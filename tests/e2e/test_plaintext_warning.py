"""A real ``kts serve`` on plain HTTP: loud about a non-loopback address (log line at WARNING and stderr),
quiet on loopback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from app.cli.server.embedded_zookeeper import free_port
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env, start_kts, wait_ready


def _warnings(log: Path) -> list[dict[str, str]]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line["level"] == "WARNING" and "PLAINTEXT" in line["message"]]


def test_plain_http_on_all_interfaces_warns_loudly(
    zk_connect: str, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    port = free_port()
    stdout, stderr = tmp_path / "stdout.log", tmp_path / "stderr.log"
    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT=zk_connect,
            KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
            KTS_HTTP_LISTENERS=f"http://0.0.0.0:{port}",
        ),
        stdout=stdout.open("w"),
        stderr=stderr.open("w"),
        text=True,
    )
    processes.append(process)
    wait_ready(f"http://127.0.0.1:{port}", process, timeout_s=60)

    logged = _warnings(stdout)
    assert len(logged) == 1
    message = logged[0]["message"]
    assert f"0.0.0.0:{port}" in message
    assert "TLS-terminating" in message
    assert logged[0]["logger"] == "app.cli.serve"
    on_stderr = [line for line in stderr.read_text().splitlines() if line.startswith("WARNING: ")]
    assert on_stderr == [f"WARNING: {message}"]


def test_plain_http_on_loopback_is_quiet(
    zk_connect: str, tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    start_kts(processes, tmp_path, "loopback", KTS_ZOOKEEPER_CONNECT=zk_connect, KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET)
    assert _warnings(tmp_path / "loopback.log") == []
