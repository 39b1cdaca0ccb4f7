"""The Kafka-protocol backend's figures on a real KRaft broker, each against a ceiling measured in the same run:

- create: token creates over HTTP / the same CreateDelegationToken RPC sent straight to the broker, as fast as
  the same number of concurrent callers can (kts's own wire, no HTTP, no audit, no decision);
- verify: ``/v1/tokens/verify`` / a no-op POST of the same server that receives and parses the same JSON body with
  the same headers (``/bench/noop``, bench/serve_variant.py), and, printed beside it, / ``GET /healthz`` (a no-op
  without a body: the client's work for a POST with a body is larger, which alone held that ratio near 0.9);
- describe: owner-filtered and full-listing latency with ``tokens`` tokens on the cluster, served from the cache.

    python -m bench.kraft [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

from app.domain.principal import KafkaPrincipal
from app.storage.kafka.client_config import kafka_client_security
from app.storage.kafka.token_rpc import TokenRpc
from app.storage.kafka.wire import KafkaWire
from bench.harness import (
    PASSWORD,
    SECRET,
    USER,
    Kts,
    basic,
    bearer,
    drive,
    latencies,
    print_json,
    summarize,
    verify_in_turns,
)
from tests.kafka.brokers import RunningBroker, start_kraft_broker

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{}" password="{}";'
# The HTTP super user that describes: not the broker's super user, which is kts's own login to the cluster and so
# never an HTTP caller's.
OPERATOR, OPERATOR_PASSWORD = "bench-operator", "bench-operator-password"


def _wire(broker: RunningBroker) -> KafkaWire:
    security = kafka_client_security(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_jaas_config=JAAS.format(broker.admin.name, broker.admin.password),
    )
    wire = KafkaWire(broker.bootstrap, security)
    wire.start()
    return wire


def _add_users(broker: RunningBroker) -> None:
    admin = broker.admin_client()
    try:
        # The benchmark's user and the HTTP super user; the broker's super user is kts's login.
        admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(USER, ScramMechanism.SCRAM_SHA_512, PASSWORD),
                UserScramCredentialUpsertion(OPERATOR, ScramMechanism.SCRAM_SHA_512, OPERATOR_PASSWORD),
            ]
        )
    finally:
        admin.close()


def _rpc_create_ceiling(rpc: TokenRpc, *, seconds: float, concurrency: int, owner: str) -> dict[str, float]:
    """CreateDelegationToken sent straight to the broker by ``concurrency`` threads for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    principal = KafkaPrincipal.user(owner)

    def work() -> None:
        nonlocal errors
        while time.monotonic() < deadline:
            began = time.perf_counter()
            try:
                rpc.create(principal, (), 3_600_000)
            except Exception:
                with lock:
                    errors += 1
                continue
            with lock:
                latencies.append(time.perf_counter() - began)

    started = time.monotonic()
    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return summarize(latencies, time.monotonic() - started, errors)


def _load(rpc: TokenRpc, count: int, owners: int, concurrency: int) -> float:
    started = time.monotonic()
    made = iter(range(count))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                n = next(made, None)
            if n is None:
                return
            rpc.create(KafkaPrincipal.user(f"u{n % owners}"), (), 3_600_000)

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started


def run(tokens: int, seconds: float, concurrency: int, workdir: Path) -> dict[str, Any]:
    report: dict[str, Any] = {"backend": "kafka (KRaft 4.x broker)", "tokens": tokens, "concurrency": concurrency}
    broker = start_kraft_broker(
        workdir / "kraft", SECRET, extra_properties={"delegation.token.expiry.check.interval.ms": "3600000"}
    )
    kts = Kts("", workdir)
    wire = _wire(broker)
    try:
        _add_users(broker)
        rpc = TokenRpc(wire)
        settings = {
            "KTS_ZOOKEEPER_CONNECT": "",
            "KTS_BOOTSTRAP_SERVERS": broker.bootstrap,
            "KTS_ADMIN_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "KTS_ADMIN_SASL_MECHANISM": "SCRAM-SHA-512",
            "KTS_ADMIN_SASL_JAAS_CONFIG": JAAS.format(broker.admin.name, broker.admin.password),
            "KTS_SUPER_USERS": f"User:{broker.admin.name},User:{OPERATOR}",
            "KTS_TOKEN_QUOTA_PER_OWNER": "0",
        }
        service, startup = kts.start("kraft-replica", audit="db", **settings)
        report["startup_seconds"] = round(startup, 2)
        token = httpx.post(f"{service.url}/v1/tokens", json={}, headers=basic(), timeout=60).json()
        mine = bearer(token["tokenId"])

        ceiling = _rpc_create_ceiling(rpc, seconds=seconds, concurrency=concurrency, owner="ceiling")
        create = asyncio.run(
            drive(
                service.url,
                lambda c: c.post("/v1/tokens", json={}, headers=basic()),
                seconds=seconds,
                concurrency=concurrency,
            )
        )
        report["create"] = {
            "http": create,
            "rpc_ceiling": ceiling,
            "ratio": round(create["per_s"] / ceiling["per_s"], 3),
        }

        report["verify"] = verify_in_turns(
            service.url, token, mine, seconds=seconds, concurrency=concurrency, server_cpu=service.cpu_s
        )

        report["load"] = {"tokens_created_by_rpc": tokens, "seconds": round(_load(rpc, tokens, 1000, concurrency), 2)}
        admin = basic(OPERATOR, OPERATOR_PASSWORD)
        with httpx.Client(base_url=service.url, timeout=60) as client:  # the cache takes them in within its interval
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and _listed(client, admin) < tokens // 1000:
                time.sleep(0.2)
        owner_filtered = asyncio.run(latencies(service.url, "/v1/tokens?owner=User:u7", admin, 200))
        full_listing = asyncio.run(latencies(service.url, "/v1/tokens", admin, 200))
        report["describe"] = {
            "owner_filtered": owner_filtered,
            "full_listing_page": full_listing,
            "full_listing_p99_vs_owner_p99": round(full_listing["p99_ms"] / owner_filtered["p99_ms"], 2),
            "rss_mb": round(service.rss_mb(), 1),
            "note": f"as a super user, {tokens} tokens on the cluster in 1000 owners, from the replica's cache",
        }
    finally:
        kts.stop()
        wire.stop()
        broker.broker.stop()
    return report


def _listed(client: httpx.Client, admin: dict[str, str]) -> int:
    """How many tokens of one owner the replica lists; 0 while it is busy or not caught up. A refused login ends the
    run at once: polled for two minutes, it would lock the account and the describe figures would measure 429s."""
    answer = client.get("/v1/tokens", params={"owner": "User:u7"}, headers=admin)
    if answer.status_code in (401, 403):
        answer.raise_for_status()
    return len(answer.json().get("tokens", [])) if answer.status_code == 200 else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    tokens = args.tokens or (2_000 if args.quick else 10_000)
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    with tempfile.TemporaryDirectory(prefix="kts-bench-kraft-") as directory:
        try:
            print_json(run(tokens, seconds, args.concurrency, Path(directory)))
        except SystemExit:
            for log in Path(directory).glob("*.log"):
                print(log.read_text()[-3000:])
            raise


if __name__ == "__main__":
    main()
