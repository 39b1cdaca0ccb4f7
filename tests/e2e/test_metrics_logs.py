"""A real ``kts serve``: ``/metrics`` answers Prometheus text, and standard output is one JSON object per
line (``log.format=json``, the default), request lines carrying the request id; ``log.format=text`` gives
plain lines. No secret appears in either stream."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
from kazoo.client import KazooClient
from prometheus_client.parser import text_string_to_metric_families

from app.cli.server.embedded_zookeeper import free_port
from tests.api.conftest import ALICE, basic, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready

WRONG_PASSWORD = "Wrong-Password-4402"


def serve(
    tmp_path: Path, zk_connect: str, processes: list[subprocess.Popen[str]], **settings: str
) -> tuple[str, subprocess.Popen[str]]:
    port = free_port()
    env = kts_env(
        KTS_HTTP_LISTENERS=f"http://127.0.0.1:{port}",
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_SERVICE_ID="metrics-e2e",
        **settings,
    )
    process = subprocess.Popen(
        [*KTS, "serve"],
        cwd=ROOT,
        env=env,
        stdout=(tmp_path / "stdout.log").open("w"),
        stderr=(tmp_path / "stderr.log").open("w"),
        text=True,
    )
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, process)
    return url, process


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    assert process.wait(15) == 0


def test_serve_answers_metrics_and_logs_json_lines_with_request_ids(
    tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]
) -> None:
    put_user(raw_zk, *ALICE)
    url, process = serve(tmp_path, zk_connect, processes)
    created = httpx.post(f"{url}/v1/tokens", json={}, headers={**basic(ALICE), "X-Request-ID": "e2e-create"})
    assert created.status_code == 201
    token = created.json()
    refused = httpx.get(f"{url}/v1/tokens", headers={**basic((ALICE[0], WRONG_PASSWORD)), "X-Request-ID": "e2e-login"})
    assert refused.status_code == 401
    scraped = httpx.get(f"{url}/metrics")  # no credentials needed
    assert scraped.status_code == 200
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
    }
    create = (("action", "token.create"), ("error_code", ""), ("outcome", "succeeded"))
    assert values[("kts_actions_total", create)] == 1
    login = (("action", "authentication"), ("error_code", ""), ("outcome", "denied"))
    assert values[("kts_actions_total", login)] == 1
    assert values[("kts_http_requests_total", (("method", "POST"), ("route", "/v1/tokens"), ("status", "201")))] == 1
    assert values[("kts_tokens", ())] == 1
    stop(process)

    stdout = (tmp_path / "stdout.log").read_text()
    entries = [json.loads(line) for line in stdout.splitlines() if line.strip()]  # every line is JSON
    assert all({"timestamp", "level", "logger", "message"} <= entry.keys() for entry in entries)
    access = [entry for entry in entries if entry["logger"] == "uvicorn.access"]
    assert access, stdout
    assert all(entry.get("requestId") for entry in access)
    by_id = {entry["requestId"]: entry for entry in access}
    assert (by_id["e2e-create"]["method"], by_id["e2e-create"]["path"], by_id["e2e-create"]["status"]) == (
        "POST",
        "/v1/tokens",
        201,
    )
    assert by_id["e2e-login"]["status"] == 401
    assert any(entry["logger"] == "uvicorn.error" and "Uvicorn running" in entry["message"] for entry in entries)
    output = stdout + (tmp_path / "stderr.log").read_text()
    for secret in (token["hmac"], ALICE[1], WRONG_PASSWORD, SECRET):
        assert secret not in output


def test_log_format_text_gives_plain_lines(
    tmp_path: Path, zk_connect: str, processes: list[subprocess.Popen[str]]
) -> None:
    url, process = serve(tmp_path, zk_connect, processes, KTS_LOG_FORMAT="text")
    assert httpx.get(f"{url}/healthz").status_code == 200
    stop(process)
    lines = [line for line in (tmp_path / "stdout.log").read_text().splitlines() if line.strip()]
    assert any(" INFO uvicorn.access: " in line and "GET /healthz" in line for line in lines), lines
    assert not any(line.startswith("{") for line in lines)
