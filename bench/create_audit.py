"""Token creates per second over HTTP with the PostgreSQL audit on, against the same service with a no-op
audit sink, measured in one run on the same ZooKeeper. Prints one JSON document.

    python -m bench.create_audit [--seconds 10] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, free_port
from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.zk.znodes import UserConfigZNode
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[1]
USER, PASSWORD = "bench", "bench-password"


def _start(variant: str, zk: str, audit_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("KTS_")} | {
        "KTS_ZOOKEEPER_CONNECT": zk,
        "KTS_DELEGATION_TOKEN_SECRET_KEY": "bench-secret",
        "KTS_HTTP_LISTENERS": f"http://127.0.0.1:{port}",
        "KTS_AUDIT_DB_URL": audit_url,
        "KTS_SERVICE_ID": f"bench-{variant}",
        # One user makes every token: its fair share of the token lists would refuse it (docs/operations.md).
        "KTS_TOKEN_WRITE_SHARE_RATIO": "0",
        "KTS_ZOOKEEPER_CLUSTER_REQUIRED": "false",  # a bare ZooKeeper: no broker has written /cluster/id there
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.serve_variant", "--audit", variant],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{variant} service did not start")


async def _load(url: str, seconds: float, concurrency: int) -> dict[str, float]:
    auth = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async with httpx.AsyncClient(base_url=url, headers=auth, timeout=30) as client:
        await client.post("/v1/tokens", json={})  # warm the credential cache and connections

        async def worker() -> None:
            nonlocal errors
            while time.monotonic() < deadline:
                started = time.perf_counter()
                response = await client.post("/v1/tokens", json={})
                if response.status_code == 201:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
    latencies.sort()
    return {
        "creates_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "requests": len(latencies),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kts-bench-") as directory:
        workdir = Path(directory)
        postgres = PostgresServer(workdir / "pg")
        postgres.start()
        try:
            with EmbeddedZooKeeper(workdir / "zk") as zookeeper:
                raw = KazooClient(hosts=zookeeper.connect_string)
                raw.start(10)
                raw.ensure_path("/config/users")
                credential = derive(Mechanism.SCRAM_SHA_512, PASSWORD, 4096)
                config = {Mechanism.SCRAM_SHA_512.value: UserConfigZNode.credential_to_string(credential)}
                raw.create(UserConfigZNode.path(USER), UserConfigZNode.encode(config))
                raw.stop()
                results = {}
                for variant, audit_url in (("none", "sqlite://"), ("db", postgres.create_database())):
                    process, url = _start(variant, zookeeper.connect_string, audit_url)
                    try:
                        results[variant] = asyncio.run(_load(url, args.seconds, args.concurrency))
                    finally:
                        process.terminate()
                        process.wait(15)
        finally:
            postgres.stop(mode="immediate")
    report = {
        "benchmark": "token creates over HTTP: PostgreSQL audit vs no-op audit sink",
        "seconds": args.seconds,
        "concurrency": args.concurrency,
        "postgres_audit": results["db"],
        "noop_audit": results["none"],
        "ratio_audit_vs_noop": round(results["db"]["creates_per_s"] / results["none"]["creates_per_s"], 3),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
