"""A broker's server.properties as kts's file, unchanged (tests/fixtures/kafka-3.x-server.properties), and the
cluster's secret key checked across replicas, with real ``kts serve`` processes and a real ZooKeeper."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from app.storage.zk.secret_fingerprint_store import ZkSecretFingerprintStore
from tests.api.conftest import ALICE, basic, put_user
from tests.conftest import SECRET
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready

FIXTURE = ROOT / "tests" / "fixtures" / "kafka-3.x-server.properties"


def broker_file(tmp_path: Path, zk_connect: str, secret: str, extra: str = "") -> Path:
    text = FIXTURE.read_text(encoding="utf-8").replace("@SECRET@", secret).replace("@ZOOKEEPER@", zk_connect)
    path = tmp_path / f"server-{free_port()}.properties"
    path.write_text(text + extra, encoding="utf-8")
    return path


def serve(config: Path | None, processes: list[subprocess.Popen[str]], **env: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*KTS, "serve", *(["--config", str(config)] if config else [])],
        cwd=ROOT,
        env=kts_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    processes.append(process)
    return process


def stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    return output


def test_a_brokers_server_properties_serves_tokens_as_it_is(
    tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]
) -> None:
    """The broker file unchanged plus kts's own keys appended: SASL_SSL listeners, keystores and the rest are
    the brokers', and the file's secret and lifetimes are kts's."""
    put_user(raw_zk, *ALICE)
    port = free_port()
    config = broker_file(tmp_path, zk_connect, SECRET, f"\n# kts\nhttp.listeners=http://127.0.0.1:{port}\n")
    process = serve(config, processes)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, process, timeout_s=60)
    token = httpx.post(f"{url}/v1/tokens", json={}, headers=basic(ALICE), timeout=30).json()
    assert token["maxTimestamp"] - token["issueTimestamp"] == 604_800_000
    verified = httpx.post(
        f"{url}/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=basic(ALICE)
    )
    assert verified.status_code == 200
    output = stop(process)
    assert "http.listeners" not in output  # no deprecation: listeners is the brokers' here
    for secret in (SECRET, "keystore-secret", "truststore-secret", token["hmac"]):
        assert secret not in output


def test_a_misspelled_kts_key_refuses_the_start_with_one_line(tmp_path: Path, zk_connect: str) -> None:
    config = broker_file(tmp_path, zk_connect, SECRET, "\nhttp.listener=http://127.0.0.1:8080\n")
    result = subprocess.run(
        [*KTS, "serve", "--config", str(config)], cwd=ROOT, env=kts_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "kts: configuration error: http.listener: not a kts or Kafka key; did you mean http.listeners?"
    ]


def test_replicas_with_the_clusters_secret_start_another_secret_is_refused(
    tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]
) -> None:
    first_port, second_port = free_port(), free_port()
    config = broker_file(tmp_path, zk_connect, SECRET)
    first = serve(config, processes, KTS_HTTP_LISTENERS=f"http://127.0.0.1:{first_port}")
    wait_ready(f"http://127.0.0.1:{first_port}", first, timeout_s=60)
    # The second replica names its listener the older way: it starts, and says which key to use instead.
    second = serve(
        None,
        processes,
        KTS_ZOOKEEPER_CONNECT=zk_connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_LISTENERS=f"http://127.0.0.1:{second_port}",
    )
    wait_ready(f"http://127.0.0.1:{second_port}", second, timeout_s=60)

    rotated = "a-different-secret-key"
    refused = subprocess.run(
        [*KTS, "serve", "--config", str(broker_file(tmp_path, zk_connect, rotated))],
        cwd=ROOT,
        env=kts_env(KTS_HTTP_LISTENERS=f"http://127.0.0.1:{free_port()}"),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert refused.returncode == 1
    (line,) = refused.stderr.splitlines()
    assert line.startswith("kts: delegation.token.secret.key differs from the one this cluster's tokens were minted")
    assert rotated not in line and SECRET not in line

    data, _ = raw_zk.get(ZkSecretFingerprintStore.PATH)
    assert SECRET.encode() not in data and rotated.encode() not in data
    stop(first)
    assert "http.listeners (KTS_HTTP_LISTENERS)" in stop(second)
