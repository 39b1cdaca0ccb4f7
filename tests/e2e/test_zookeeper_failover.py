"""Kill the ZooKeeper ensemble's leader during a stream of creates and renews on two replicas: every
request answered 2xx is in ZooKeeper afterwards with the state the answer claimed; the others got 503
(or 409 for a lost compare-and-set race), never a 500."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from kazoo.client import KazooClient

from app.storage.zk.znodes import TokenZNode
from tests.api.conftest import ALICE, basic, put_user
from tests.conftest import SECRET, seed_kafka_cluster
from tests.e2e.conftest import start_kts
from tests.zookeeper_ensemble import ZooKeeperEnsemble

STREAM_SECONDS = 8.0
KILL_AFTER_SECONDS = 2.5


def test_ensemble_leader_killed_during_creates_and_renews(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    ensemble = ZooKeeperEnsemble(tmp_path / "ensemble")
    ensemble.start()
    try:
        connect = ensemble.connect_string + "/kafka"
        seed_kafka_cluster(ensemble.connect_string, "/kafka")
        raw = KazooClient(hosts=connect)
        raw.start(15)
        put_user(raw, *ALICE)
        settings = {
            "KTS_ZOOKEEPER_CONNECT": connect,
            "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
            "KTS_ZOOKEEPER_SESSION_TIMEOUT_MS": "6000",
            # One user streams every write: a share of the whole budget keeps the ledger in each transaction
            # through the failover without refusing the stream (shares have tests of their own).
            "KTS_TOKEN_WRITE_SHARE_RATIO": "1",
        }
        urls = [start_kts(processes, tmp_path, f"replica-{n}", **settings) for n in range(2)]

        statuses: Counter[int] = Counter()
        created: dict[str, dict[str, Any]] = {}  # token id -> the acknowledged create
        last_renewal: dict[str, int] = {}  # token id -> expiry of the last acknowledged renew
        lock = threading.Lock()
        deadline = time.monotonic() + STREAM_SECONDS

        def worker(url: str) -> None:
            with httpx.Client(base_url=url, headers=basic(ALICE), timeout=30) as client:
                mine: list[dict[str, Any]] = []
                while time.monotonic() < deadline:
                    response = client.post("/v1/tokens", json={})
                    with lock:
                        statuses[response.status_code] += 1
                    if response.status_code == 201:
                        token = response.json()
                        with lock:
                            created[token["tokenId"]] = token
                        mine.append(token)
                    for token in mine[-2:]:
                        renewed = client.post("/v1/tokens/renew", json={"hmac": token["hmac"]})
                        with lock:
                            statuses[renewed.status_code] += 1
                            if renewed.status_code == 200:
                                last_renewal[token["tokenId"]] = renewed.json()["expiryTimestamp"]

        threads = [threading.Thread(target=worker, args=(url,)) for url in urls for _ in range(2)]
        for thread in threads:
            thread.start()
        time.sleep(KILL_AFTER_SECONDS)
        killed = ensemble.leader()
        ensemble.kill(killed)
        for thread in threads:
            thread.join()
        print(f"killed ZooKeeper member {killed + 1}; answers: {dict(sorted(statuses.items()))}")

        assert 500 not in statuses
        assert set(statuses) <= {200, 201, 409, 503}
        assert statuses[201] > 0 and statuses[200] > 0
        for token_id, token in created.items():
            data, _ = raw.get(f"{TokenZNode.ROOT}/{token_id}")
            stored = json.loads(data)
            assert stored["maxTimestamp"] == token["maxTimestamp"]
            # a renew answered 503 may still have landed, so the stored expiry is at least the last acknowledged
            assert stored["expiryTimestamp"] >= last_renewal.get(token_id, token["expiryTimestamp"])
        raw.stop()
    finally:
        ensemble.stop()
