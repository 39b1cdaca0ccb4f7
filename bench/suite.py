"""The benchmark suite (docs/operations.md#benchmarks): every figure with its ceiling measured in the same run,
printed as one JSON document with the goals of issue 38 (bench/goals.py: each a ratio of a figure to the raw
work a perfect kts could not avoid, bench/ceilings.py), and the time from a token's create to its first login on
a real Kafka broker (bench/broker_login.py). The goals also go to standard error as a table, with the load
average at the run's start and end.

    python -m bench.suite            # 100k tokens
    python -m bench.suite --quick    # the same figures on small data, in a few minutes
    python -m bench.kraft [--quick]  # only the Kafka-protocol backend's (also under "kraft" here)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper
from app.storage.zk.admission import BATCH as SWEEP_BATCH
from app.storage.zk.znodes import TokenZNode
from bench import broker_login, ceilings, gc_watch
from bench.goals import evaluate, table
from bench.harness import (
    ADMIN,
    ADMIN_PASSWORD,
    Kts,
    add_users,
    basic,
    bearer,
    drive,
    latencies,
    load_tokens,
    paired_latencies,
    print_json,
    raw_create_ceiling,
    verify_in_turns,
)
from bench.serve_variant import STATIC_PAGE_IN_THREAD

POLL_PAUSE_S = 0.001  # between the convergence probe's polls (_convergence)
# Describes by owner and static pages, in turns (harness.paired_latencies): a p99 of 1000 is the 11th largest, of 200
# the 3rd, which one stall of the machine could set.
DESCRIBE_SAMPLES = 1000

PARTS = ("create", "verify", "loaded", "sweep", "broker", "kraft", "report")
PARTS_HELP = (
    "comma-separated parts to run (default: all): create (create, no-op and raw ZooKeeper rates), verify "
    "(verify and Basic-versus-Bearer rates), loaded (start-up, memory, describe and convergence with the tokens "
    "loaded), sweep, broker (create to first login on a Kafka broker), kraft (the Kafka-protocol backend), report "
    "(the audit report over synthetic events against one scan and group-by of them)"
)


def _client(zk_connect: str) -> KazooClient:
    hosts, _, chroot = zk_connect.partition("/")
    bootstrap = KazooClient(hosts=hosts)
    bootstrap.start(15)
    bootstrap.ensure_path("/" + chroot)
    bootstrap.stop()
    client = KazooClient(hosts=zk_connect)
    client.start(15)
    return client


def _convergence(first: str, second: str, creates: int) -> dict[str, float]:
    delays = []
    with httpx.Client(timeout=30) as client:
        for _ in range(creates):
            token = client.post(f"{first}/v1/tokens", json={}, headers=basic()).json()
            body = {"tokenId": token["tokenId"], "hmac": token["hmac"]}
            started = time.perf_counter()
            while client.post(f"{second}/v1/tokens/verify", json=body, headers=basic()).status_code != 200:
                # A pause between polls: back to back, the probe kept the replica's request threads busy and the
                # thread that follows notifications waited for the interpreter lock (in one run 17 of 200 creates
                # took 50-343 ms; with the pause, p99 21 ms); the figure is one poll coarser.
                time.sleep(POLL_PAUSE_S)
            delays.append(time.perf_counter() - started)
    delays.sort()
    return {
        "p50_ms": round(statistics.median(delays) * 1000, 2),
        "p99_ms": round(delays[max(0, int(len(delays) * 0.99) - 1)] * 1000, 2),
        "creates": creates,
        "note": "includes one verify round trip on the second replica (which runs without the failure "
        f"throttle: see _loaded_figures), polled every {POLL_PAUSE_S * 1000:.0f} ms",
    }


def _audit_report(events: int) -> dict[str, Any]:
    """bench/audit_report.py in a child process, once ZooKeeper and the brokers are gone: its Spark JVM has
    the machine to itself, and its memory stays out of this process's. Its progress goes to standard error."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.audit_report", "--events", str(events)],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout)
    return {
        "events": figures["events"],
        "seconds": figures["seconds"],
        "report_seconds": figures["seconds"]["report"],
        "ceiling_seconds": figures["seconds"]["ceiling"],
        "ratio": figures["report_over_ceiling"],
        "ratio_in_cpu_time": figures["report_over_ceiling_cpu"],
        "ceiling_warm_seconds": figures["seconds"]["ceiling_warm"],
        "ratio_warm": figures["report_over_ceiling_warm"],
        "ratio_warm_in_cpu_time": figures["report_over_ceiling_warm_cpu"],
        "load_average": figures["load_average"],
        "note": "ratio: the whole report (every table and report.html) / one scan of every column with one "
        "group-by by token id, each on a fresh Spark JVM of its own (the ceiling in a child process); the warm "
        "figures: the same scan on the report's JVM after the report (no JIT compilation left to pay). "
        "The rest of bench.audit_report's JSON with --events. "
        "The goal is for 10M events: on far fewer the report's fixed cost (some 20 Spark queries, the charts) "
        "dominates",
    }


def run(
    tokens: int,
    seconds: float,
    concurrency: int,
    workdir: Path,
    broker_logins: int = 200,
    parts: tuple[str, ...] = PARTS,
) -> dict[str, Any]:
    report: dict[str, Any] = {"tokens": tokens, "seconds_per_rate": seconds, "concurrency": concurrency}
    with EmbeddedZooKeeper(workdir / "zk", jvm_options=("-Djute.maxbuffer=16777216",)) as zookeeper:
        if {"create", "verify", "loaded"} & set(parts):
            _first_replica_figures(report, zookeeper.connect_string, tokens, seconds, concurrency, workdir, parts)
        if "sweep" in parts:
            report["sweep"] = _sweep(zookeeper.connect_string, tokens, workdir)
        if "broker" in parts:
            report["broker_login"] = broker_login.run(broker_logins, workdir, zookeeper)
    report["jute_maxbuffer"] = (
        "ZooKeeper runs with -Djute.maxbuffer=16777216 here: past about 1 MB of token names (some 40k tokens) "
        "Java clients such as brokers need it raised; kts (kazoo) does not"
    )
    return report


def _first_replica_figures(
    report: dict[str, Any],
    zk_connect: str,
    tokens: int,
    seconds: float,
    concurrency: int,
    workdir: Path,
    parts: tuple[str, ...],
) -> None:
    main_connect = f"{zk_connect}/bench-main"
    raw = _client(main_connect)
    add_users(raw)
    kts = Kts(main_connect, workdir)
    try:
        # Its creates all come from one user, far past the default quota of live tokens per owner and its
        # fair share of the token lists.
        first, _ = kts.start("replica-a", audit="db", KTS_TOKEN_QUOTA_PER_OWNER="0", KTS_TOKEN_WRITE_SHARE_RATIO="0")
        token = httpx.post(f"{first.url}/v1/tokens", json={}, headers=basic()).json()
        mine = bearer(token["tokenId"])

        def rate(request: Any) -> dict[str, float]:
            return asyncio.run(drive(first.url, request, seconds=seconds, concurrency=concurrency))

        noop: dict[str, float] | None = None
        if "create" in parts:
            # The ceiling writes in a chroot of its own, so the token count of the later figures stays exact.
            ceiling_connect = f"{zk_connect}/bench-ceiling"
            _client(ceiling_connect).stop()
            ceiling = raw_create_ceiling(ceiling_connect, seconds=seconds)
            create = rate(lambda c: c.post("/v1/tokens", json={}, headers=basic()))
            noop = rate(lambda c: c.get("/healthz"))
            report["create"] = {
                "http": create,
                "noop_ceiling": noop,
                "ratio_vs_noop": round(create["per_s"] / noop["per_s"], 3),
                "raw_zookeeper_ceiling": ceiling,
                "ratio": round(create["per_s"] / ceiling["per_s"], 3),
                "note": "Basic-authenticated, audited (SQLite) creates; noop_ceiling: GET /healthz on the same "
                "server and client, right after the creates",
            }

        if "verify" in parts:
            report["verify"] = verify_in_turns(
                first.url, token, mine, seconds=seconds, concurrency=concurrency, server_cpu=first.cpu_s
            )
            path = f"/v1/tokens/{token['tokenId']}"
            with_basic = rate(lambda c: c.get(path, headers=basic()))
            with_bearer = rate(lambda c: c.get(path, headers=mine))
            report["basic_vs_bearer"] = {
                "basic": with_basic,
                "bearer": with_bearer,
                "ratio": round(with_basic["per_s"] / with_bearer["per_s"], 3),
            }

        if "loaded" in parts:
            _loaded_figures(report, raw, main_connect, kts, first.url, tokens)
    finally:
        kts.stop()
        raw.stop()


def _loaded_figures(
    report: dict[str, Any], raw: KazooClient, zk_connect: str, kts: Kts, first_url: str, tokens: int
) -> None:
    """Start-up, memory, describe and convergence of a second replica once ``tokens`` tokens are in ZooKeeper."""
    started = time.monotonic()
    load_tokens(raw, tokens)
    report["load"] = {"tokens_written": tokens, "seconds": round(time.monotonic() - started, 2)}
    started = time.monotonic()
    names = raw.get_children(TokenZNode.ROOT)
    report["list_children"] = {"children": len(names), "seconds": round(time.monotonic() - started, 3)}
    raw_load = ceilings.raw_load(raw, zk_connect)  # before the replica starts: each has the machine to itself

    # The convergence probe polls /v1/tokens/verify on this replica until the new token verifies: each poll that
    # comes before the token is a failed verify, and past auth.failures.max of them (10 per token, 100 per address
    # a minute) the brute-force defence answers 429 for seconds, which the probe would measure instead of
    # convergence (p99 of 6 s in earlier runs). So this replica runs without the failure throttle.
    load_before = os.getloadavg()[0]
    static_page = kts.workdir / "static-page.json"
    second, startup = kts.start(
        "replica-b", KTS_AUTH_FAILURES_MAX="0", BENCH_STATIC_PAGE=str(static_page), BENCH_GC_WATCH="1"
    )
    report["startup"] = {
        "seconds": round(startup, 2),
        "cpu_seconds": round(second.cpu_s(), 2),
        # The 1-minute load average before and after: on a 2-core machine shared with other work, seconds is
        # only comparable between runs at similar loads (cpu_seconds much less depends on it).
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "tokens_in_zookeeper": len(names),
        "raw_load_ceiling": raw_load,
        "ratio": round(startup / raw_load["seconds"], 3),
        "ratio_in_cpu_time": round(second.cpu_s() / raw_load["cpu_seconds"], 3),
        "note": "seconds: from the process's start to /readyz answering 200; cpu_seconds: the CPU time the replica "
        "used meanwhile (on a busy machine the rest is time it waited for a core)",
    }
    report["memory"] = {"rss_mb": round(second.rss_mb(), 1), "tokens": len(names)}

    admin = basic(ADMIN, ADMIN_PASSWORD)
    owner_page = httpx.get(f"{second.url}/v1/tokens?owner=User:u7", headers=admin, timeout=60)
    owner_page.raise_for_status()
    static_page.write_bytes(owner_page.content)  # the no-op ceiling answers the same bytes
    gc_before = _gc(second.url)
    paired = asyncio.run(
        paired_latencies(
            second.url,
            {
                "owner_filtered": "/v1/tokens?owner=User:u7",
                "static": STATIC_PAGE_IN_THREAD,
                "static_on_loop": "/bench/static-page",
            },
            admin,
            DESCRIBE_SAMPLES,
        )
    )
    owner_filtered, static, on_loop = paired["owner_filtered"], paired["static"], paired["static_on_loop"]
    gc_described = _gc(second.url)
    full_listing = asyncio.run(latencies(second.url, "/v1/tokens", admin, 200))
    report["describe"] = {
        "owner_filtered": owner_filtered,
        "static_page_ceiling": static | {"bytes": len(owner_page.content)},
        "ratio": round(owner_filtered["p99_ms"] / static["p99_ms"], 3),
        "static_page_on_loop": on_loop,
        "ratio_vs_static_page_on_loop": round(owner_filtered["p99_ms"] / on_loop["p99_ms"], 3),
        "full_listing_page": full_listing,
        "full_listing_p99_vs_owner_p99": round(full_listing["p99_ms"] / owner_filtered["p99_ms"], 2),
        "full_listing_first_page": asyncio.run(latencies(second.url, "/v1/tokens?limit=1000", admin, 20)),
        "gc": gc_watch.difference(gc_before, gc_described)
        | {"note": "the replica's garbage collections (generations 0, 1, 2) while owner_filtered and its ceiling ran"},
        "note": f"as a super user. owner_filtered: the 100 tokens of one owner, {DESCRIBE_SAMPLES} GETs in turns with "
        "static_page_ceiling's and static_page_on_loop's on one connection; full_listing_page: the first "
        "page of every token at the default limit (100 tokens, the same answer size); static_page_ceiling: the "
        "owner-filtered answer's bytes served by a no-op endpoint of the same server (bench/serve_variant.py), "
        "a plain def run in a thread of the request pool as kts's endpoints are (a describe's audit row is "
        "written through a blocking driver before the answer), same client, same headers; static_page_on_loop: "
        "the same bytes answered from the event loop, with no hop (the ceiling before); full_listing_first_page: "
        "limit=1000, as earlier runs measured it",
    }
    # The raw chain first, on the same notification folder (its listing is as long as the replicas'), with a
    # follower client of its own.
    follower = _client(zk_connect)
    try:
        raw_chain = ceilings.raw_chain(raw, follower, 200)
    finally:
        follower.stop()
    report["convergence"] = _convergence(first_url, second.url, 200)
    report["convergence"]["raw_chain_ceiling"] = raw_chain
    report["convergence"]["ratio"] = round(report["convergence"]["p99_ms"] / raw_chain["p99_ms"], 3)


def _gc(url: str) -> dict[str, Any]:
    """The replica's garbage collections so far (bench/gc_watch.py)."""
    answer = httpx.get(f"{url}/bench/gc", timeout=60)
    answer.raise_for_status()
    counts: dict[str, Any] = answer.json()
    return counts


def _sweep(zk_connect: str, tokens: int, workdir: Path) -> dict[str, Any]:
    sweep_connect = f"{zk_connect}/bench-sweep"
    raw = _client(sweep_connect)
    add_users(raw)
    load_tokens(raw, tokens, expired=True)
    sweeper_kts = Kts(sweep_connect, workdir)
    audit_db = workdir / "sweeper-audit.db"
    try:
        sweeper, _ = sweeper_kts.start("sweeper", audit="db", KTS_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS="1000")
        started = time.monotonic()
        cpu_before = sweeper.cpu_s()
        cap = 600.0
        # The first sweep comes one interval after the election: its start is when the first token is gone
        # (a Stat every 10 ms, one small answer).
        while time.monotonic() - started < cap and _left(raw) >= tokens:
            time.sleep(0.01)
        first_deletion = time.monotonic()
        # Done when every token is gone and its expiry is settled in the audit log (the sweep is audited). The
        # tokens left are counted from the folder's Stat: listing 100k names every 250 ms (kazoo decodes each
        # name in Python) kept most of a core of this 2-core machine busy beside the replica it measures.
        while time.monotonic() - started < cap and (_left(raw) or _audited_sweeps(audit_db) < tokens):
            time.sleep(0.05)
        elapsed = time.monotonic()
        figures: dict[str, Any] = {
            "tokens": tokens,
            "seconds": round(elapsed - started, 2),
            "sweep_seconds": round(elapsed - first_deletion, 2),
            "cpu_seconds": round(sweeper.cpu_s() - cpu_before, 2),
            "left": len(raw.get_children(TokenZNode.ROOT)),
            "audit_events": _audited_sweeps(audit_db),
        }
    finally:
        sweeper_kts.stop()
        raw.stop()
    # The ceiling once the replica is gone, on tokens of its own, into the same audit file.
    raw_connect = f"{zk_connect}/bench-raw-sweep"
    raw = _client(raw_connect)
    try:
        token_ids = load_tokens(raw, tokens, expired=True)
        ceiling = ceilings.raw_sweep(raw, token_ids, audit_db, batch=SWEEP_BATCH)
    finally:
        raw.stop()
    return figures | {
        "raw_sweep_ceiling": ceiling,
        "ratio": round(figures["sweep_seconds"] / ceiling["seconds"], 3),
        "ratio_in_cpu_time": round(figures["cpu_seconds"] / ceiling["cpu_seconds"], 3),
        "note": "seconds: from the sweeper's readiness, so with the first interval (1 s) before the first sweep; "
        "sweep_seconds (the goal's figure): from the first token gone until every token is gone and its expiry "
        "settled (succeeded) in the sweeper's audit database, polled every 50 ms; cpu_seconds: the CPU time the "
        "replica used from readiness to the end",
    }


def _left(raw: KazooClient) -> int:
    """How many tokens are left, from the token folder's Stat (one small answer, whatever the count)."""
    stat = raw.exists(TokenZNode.ROOT)
    return 0 if stat is None else int(stat.numChildren)


def _audited_sweeps(database: Path) -> int:
    """How many swept tokens the sweeper's audit log holds settled (the sweep is audited, one event per token)."""
    with sqlite3.connect(database) as connection:
        row = connection.execute(
            "SELECT count(*) FROM audit_events WHERE action = 'token.sweep' AND outcome = 'succeeded'"
        ).fetchone()
    return int(row[0])


def _part(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A later part's figures, or the error that ended it: the figures measured before it are still printed (its
    goals then read not measured)."""
    try:
        return measure()
    except Exception as exc:  # any failure of a part, reported in the JSON
        return {"error": f"{type(exc).__name__}: {exc}"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small data, short runs: about a minute")
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--parts", default=",".join(PARTS), help=PARTS_HELP)
    parser.add_argument("--audit-events", type=int, help="events of the audit report (default 10M, 200k with --quick)")
    args = parser.parse_args()
    parts = tuple(part.strip() for part in args.parts.split(",") if part.strip())
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)} (known: {', '.join(PARTS)})")
    tokens = args.tokens or (2_000 if args.quick else 100_000)
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    from bench import kraft  # the Kafka-protocol backend's figures (it imports this module's helpers)

    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kts-bench-") as directory:
        report = run(
            tokens, seconds, args.concurrency, Path(directory), broker_logins=100 if args.quick else 200, parts=parts
        )
        if "kraft" in parts:
            # Creates through a KRaft controller are far slower than znode writes: fewer tokens for its describe.
            report["kraft"] = _part(lambda: kraft.run(min(tokens, 10_000), seconds, args.concurrency, Path(directory)))
        if "report" in parts:  # last, when ZooKeeper and the brokers are gone: Spark has the machine to itself
            events = args.audit_events or (200_000 if args.quick else 10_000_000)
            report["audit_report"] = _part(lambda: _audit_report(events))
        report["goals"] = evaluate(report)
        report["met"] = {name: goal["met"] for name, goal in report["goals"].items()}
        report["load_average"] = {
            "start": [round(value, 2) for value in load_at_start],
            "end": [round(value, 2) for value in os.getloadavg()],
            "note": "1, 5 and 15 minutes, at the run's start and end: figures compare across runs only at "
            "similar loads",
        }
        print_json(report)
        print(table(report["goals"]), file=sys.stderr)
        loads = report["load_average"]
        print(f"load average: start {loads['start']}, end {loads['end']}", file=sys.stderr)


if __name__ == "__main__":
    main()
