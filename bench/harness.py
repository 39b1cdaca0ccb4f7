"""What every benchmark needs: its own ZooKeeper, kts processes, users, tokens loaded fast, load drivers.

Load comes from this process (an asyncio httpx client), the services run in their own processes.
"""

from __future__ import annotations

import asyncio
import base64
import compileall
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import free_port
from app.domain.credentials import Mechanism
from app.domain.principal import KafkaPrincipal
from app.domain.scram import derive
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret, encode_hmac, new_token_id
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode, UserConfigZNode

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret"
USER, PASSWORD = "bench", "bench-password"
ADMIN, ADMIN_PASSWORD = "admin", "admin-password"


def basic(user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def bearer(token_id: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_id}:{encode_hmac(TokenSecret(SECRET).hmac(token_id))}"}


def add_users(zk: KazooClient) -> None:
    zk.ensure_path("/config/users")
    for name, password in ((USER, PASSWORD), (ADMIN, ADMIN_PASSWORD)):
        credential = derive(Mechanism.SCRAM_SHA_512, password, 4096)
        config = {Mechanism.SCRAM_SHA_512.value: UserConfigZNode.credential_to_string(credential)}
        if not zk.exists(UserConfigZNode.path(name)):
            zk.create(UserConfigZNode.path(name), UserConfigZNode.encode(config))


def load_tokens(zk: KazooClient, count: int, *, owners: int = 1000, expired: bool = False) -> list[str]:
    """Write ``count`` token znodes directly (pipelined, as brokers would have), owners spread evenly."""
    zk.ensure_path(TokenZNode.ROOT)
    now = int(time.time() * 1000)
    ids = []
    pending = []
    for n in range(count):
        token_id = new_token_id()
        owner = KafkaPrincipal.user(f"u{n % owners}")
        expiry = now - 1000 if expired else now + 86_400_000
        token = TokenInformation(token_id, owner, owner, (), now - 2000, expiry, now + 604_800_000)
        pending.append(zk.create_async(TokenZNode.path(token_id), TokenZNode.encode(token)))
        ids.append(token_id)
        if len(pending) >= 2000:
            for result in pending:
                result.get()
            pending.clear()
    for result in pending:
        result.get()
    return ids


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    url: str

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_s(self) -> float:
        """The CPU time (user and system) the process has used so far: on a busy machine, what start-up itself
        cost, apart from the time it waited for a core."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def compiled_as_installed() -> None:
    """The bytecode of ``app`` written, as installing kts writes it (the image's ``pip install``): a replica started
    from a checkout under PYTHONDONTWRITEBYTECODE=1 (as the image sets it, and many shells) would otherwise compile
    every module of ``app`` from source at each start, some 0.1 s of CPU no deployed replica spends. Modules whose
    bytecode is current are left alone."""
    compileall.compile_dir(ROOT / "app", quiet=1)


@dataclass
class Kts:
    zk_connect: str
    workdir: Path
    services: list[Service] = field(default_factory=list)

    def start(self, name: str, *, audit: str = "none", wait: bool = True, **settings: str) -> tuple[Service, float]:
        """A replica (``--audit none`` unless told) and the seconds until it was ready."""
        port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith("KTS_")} | {
            "KTS_ZOOKEEPER_CONNECT": self.zk_connect,
            "KTS_DELEGATION_TOKEN_SECRET_KEY": SECRET,
            "KTS_SUPER_USERS": f"User:{ADMIN}",
            "KTS_HTTP_LISTENERS": f"http://127.0.0.1:{port}",
            "KTS_SERVICE_ID": name,
            "KTS_AUDIT_DB_URL": f"sqlite:///{self.workdir / (name + '-audit.db')}",
            # The suite's ZooKeeper runs with jute.maxbuffer=16777216 and no broker, so 100,000 tokens and their
            # sweep fit: raise the capacity guard's budget with it, as docs/operations.md tells operators to.
            "KTS_ZOOKEEPER_CHILDREN_MAX_BYTES": "15000000",
            "KTS_ZOOKEEPER_CLUSTER_REQUIRED": "false",  # no broker has written /cluster/id there
            **settings,
        }
        compiled_as_installed()
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.serve_variant", "--audit", audit],
            cwd=ROOT,
            env=env,
            stdout=(self.workdir / f"{name}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        service = Service(process, f"http://127.0.0.1:{port}")
        self.services.append(service)
        if wait:
            _wait_ready(service, port, started + 600, self.workdir / f"{name}.log")
        return service, time.monotonic() - started

    def stop(self) -> None:
        for service in self.services:
            service.stop()


# How often a starting replica is probed. Start-up's ceiling (bench/raw_load_process.py) is timed to its exit, which
# its parent learns at once; a replica is timed to its first /readyz answered 200, which a poll learns up to one pause
# late (half a pause on average: 25 ms of the 50 ms this once was). Probing every 2 ms keeps that lag to about 1 ms,
# and costs the replica nothing: its port is bound only once its lifespan has started the runtime (the token load
# done), so until then each probe is a connect the kernel refuses, made without an HTTP client.
READY_PROBE_PAUSE_S = 0.002
READY_RETRY_PAUSE_S = 0.05  # after an answer other than 200 (a bound port not ready yet): a request costs the replica


def _wait_ready(service: Service, port: int, deadline: float, log: Path) -> None:
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if service.process.poll() is not None:
                raise SystemExit(f"{log.stem} exited; see {log}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
            except OSError:
                time.sleep(READY_PROBE_PAUSE_S)
                continue
            try:
                if client.get(f"{service.url}/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(READY_RETRY_PAUSE_S)


def summarize(latencies: list[float], elapsed: float, errors: int) -> dict[str, float]:
    latencies = sorted(latencies)
    if not latencies:
        return {"per_s": 0.0, "p50_ms": float("nan"), "p99_ms": float("nan"), "requests": 0, "errors": errors}
    return {
        "per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000, 2),
        "requests": len(latencies),
        "errors": errors,
    }


async def drive(
    url: str,
    request: Callable[[httpx.AsyncClient], Awaitable[httpx.Response]],
    *,
    seconds: float,
    concurrency: int,
    ok: tuple[int, ...] = (200, 201),
) -> dict[str, float]:
    """Closed-loop load: ``concurrency`` workers each sending ``request`` back to back for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        await request(client)  # warm-up: connections, caches
        deadline = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.monotonic() < deadline:
                started = time.perf_counter()
                response = await request(client)
                if response.status_code in ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
    return summarize(latencies, elapsed, errors)


async def drive_in_turns(
    url: str,
    requests: dict[str, Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]],
    *,
    seconds: float,
    concurrency: int,
    rounds: int = 5,
    ok: tuple[int, ...] = (200, 201),
    server_cpu: Callable[[], float] | None = None,
) -> dict[str, dict[str, float]]:
    """``drive`` for each of ``requests`` (``seconds`` each in all), in ``rounds`` turns of ``seconds / rounds``,
    the order reversed every other round, on the same connections: a rate and its ceiling then meet the same moments
    of a shared machine, where one after the other they met different loads (a ratio of rates near 0.9 moved by
    more than its margin between runs). With ``server_cpu`` (the server's CPU seconds so far, ``Service.cpu_s``),
    each figure also holds the CPU milliseconds per request of the server and of this client: what a rate costs
    whatever else shares the machine."""
    samples: dict[str, list[float]] = {name: [] for name in requests}
    errors = dict.fromkeys(requests, 0)
    elapsed = dict.fromkeys(requests, 0.0)
    server_s = dict.fromkeys(requests, 0.0)
    client_s = dict.fromkeys(requests, 0.0)
    order = list(requests.items())
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        for request in requests.values():
            await request(client)  # warm-up: connections, caches
        for round_ in range(rounds):
            for name, request in order if round_ % 2 == 0 else reversed(order):
                deadline = time.monotonic() + seconds / rounds

                async def worker(name: str = name, request: Any = request, deadline: float = deadline) -> None:
                    while True:  # at least one request a turn, however late the worker starts
                        started = time.perf_counter()
                        response = await request(client)
                        if response.status_code in ok:
                            samples[name].append(time.perf_counter() - started)
                        else:
                            errors[name] += 1
                        if time.monotonic() >= deadline:
                            return

                started, server_before, client_before = time.monotonic(), _cpu(server_cpu), time.process_time()
                await asyncio.gather(*(worker() for _ in range(concurrency)))
                elapsed[name] += time.monotonic() - started
                server_s[name] += _cpu(server_cpu) - server_before
                client_s[name] += time.process_time() - client_before
    figures = {name: summarize(samples[name], elapsed[name], errors[name]) for name in requests}
    if server_cpu is not None:
        for name, figure in figures.items():
            answered = max(1, len(samples[name]) + errors[name])
            figure["server_cpu_ms"] = round(server_s[name] / answered * 1000, 3)
            figure["client_cpu_ms"] = round(client_s[name] / answered * 1000, 3)
    return figures


def _cpu(read: Callable[[], float] | None) -> float:
    return 0.0 if read is None else read()


def raw_create_ceiling(zk_connect: str, *, seconds: float, in_flight: int = 64) -> dict[str, float]:
    """The ceiling for creates: kazoo multi-op transactions (token znode + notification), pipelined. Only the
    transactions ZooKeeper committed count; one it refused (or a lost answer) is counted apart, in ``errors``."""
    zk = KazooClient(hosts=zk_connect)
    zk.start(15)
    zk.ensure_path(TokenZNode.ROOT)  # the transaction's parents, as kts's own start-up makes them
    zk.ensure_path(TokenChangeZNode.ROOT)
    now = int(time.time() * 1000)
    owner = KafkaPrincipal.user("ceiling")
    done = errors = 0
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    window: list[Any] = []

    def settle(result: Any) -> None:
        nonlocal done, errors
        try:
            committed = not any(isinstance(answer, Exception) for answer in result.get())
        except Exception:
            committed = False
        if committed:
            done += 1
        else:
            errors += 1

    while time.monotonic() < deadline:
        token_id = new_token_id()
        token = TokenInformation(token_id, owner, owner, (), now, now + 86_400_000, now + 604_800_000)
        transaction = zk.transaction()
        transaction.create(TokenZNode.path(token_id), TokenZNode.encode(token))
        transaction.create(TokenChangeZNode.PREFIX, TokenChangeZNode.encode(token_id), sequence=True)
        window.append(transaction.commit_async())
        if len(window) >= in_flight:
            settle(window.pop(0))
    for result in window:
        settle(result)
    elapsed = time.monotonic() - started
    zk.stop()
    return {"per_s": round(done / elapsed, 1), "transactions": done, "errors": errors}


def verify_in_turns(
    url: str,
    token: dict[str, Any],
    headers: dict[str, str],
    *,
    seconds: float,
    concurrency: int,
    server_cpu: Callable[[], float],
) -> dict[str, Any]:
    """``token``'s verify (authenticated by ``headers``), the POST no-op of the same body and headers and
    ``GET /healthz``, driven in turns on one server, as ``verify_figures``."""
    from bench.serve_variant import NOOP_POST  # the bench-only route it answers

    body = {"tokenId": token["tokenId"], "hmac": token["hmac"]}
    rates = asyncio.run(
        drive_in_turns(
            url,
            {
                "verify": lambda c: c.post("/v1/tokens/verify", json=body, headers=headers),
                "noop_post": lambda c: c.post(NOOP_POST, json=body, headers=headers),
                "noop_get": lambda c: c.get("/healthz"),
            },
            seconds=seconds,
            concurrency=concurrency,
            server_cpu=server_cpu,
        )
    )
    return verify_figures(rates["verify"], rates["noop_post"], rates["noop_get"])


def verify_figures(verify: dict[str, float], noop_post: dict[str, float], noop_get: dict[str, float]) -> dict[str, Any]:
    """A verify's rate against its no-op ceilings: the POST of the same body and headers (the goal's) and, beside
    it, ``GET /healthz``."""
    return {
        "verify": verify,
        "noop_post_ceiling": noop_post,
        "ratio": _ratio(verify["per_s"], noop_post["per_s"]),
        # Rates are bound by the CPU of the client and the server together (2 cores): the same ratio from CPU time.
        "ratio_in_cpu_time": _ratio(_request_cpu(noop_post), _request_cpu(verify)),
        "noop_ceiling": noop_get,
        "ratio_vs_get": _ratio(verify["per_s"], noop_get["per_s"]),
        "ratio_vs_get_in_cpu_time": _ratio(_request_cpu(noop_get), _request_cpu(verify)),
        "note": "noop_post_ceiling: POST /bench/noop with the verify's JSON body and headers, parsed by a plain "
        "FastAPI endpoint first in the routing table, a fixed answer (bench/serve_variant.py); noop_ceiling: "
        "GET /healthz; same server, client and concurrency, the three driven in turns (harness.drive_in_turns)",
    }


def _ratio(figure: float | None, ceiling: float | None) -> float | None:
    return round(figure / ceiling, 3) if figure is not None and ceiling else None


def _request_cpu(figure: dict[str, float]) -> float | None:
    """The CPU milliseconds one request costs the server and the client (None: not measured)."""
    if "server_cpu_ms" not in figure:
        return None
    return figure["server_cpu_ms"] + figure["client_cpu_ms"]


def print_json(document: dict[str, Any]) -> None:
    print(json.dumps(document, indent=2))


async def latencies(url: str, path: str, headers: dict[str, str], count: int) -> dict[str, float]:
    """Latencies of ``count`` GETs of ``path``, one after another on one connection."""
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        await client.get(path)  # a first request warms the connection and the server
        samples = []
        started = time.monotonic()
        for _ in range(count):
            begin = time.perf_counter()
            response = await client.get(path)
            response.raise_for_status()
            samples.append(time.perf_counter() - begin)
        return summarize(samples, time.monotonic() - started, 0)


async def paired_latencies(url: str, paths: dict[str, str], headers: dict[str, str], count: int) -> dict[str, Any]:
    """Latencies of ``count`` GETs of each of ``paths`` on one connection, taken in turns (one of each per round, the
    order reversed every other round), so that each figure meets the same moments of a shared machine (``per_s``: of
    the whole run, every path together): measured one after the other, a p99 (the 3rd largest of 200) told more about
    what else ran in those seconds than about the request (describe over its static page: 1.54 in one run, 0.85 in
    the next)."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    order = list(paths.items())
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        for path in paths.values():
            await client.get(path)  # a first request warms the connection and the server
        started = time.monotonic()
        for round_ in range(count):
            for name, path in order if round_ % 2 == 0 else reversed(order):
                begin = time.perf_counter()
                response = await client.get(path)
                response.raise_for_status()
                samples[name].append(time.perf_counter() - begin)
        elapsed = time.monotonic() - started
    return {name: summarize(taken, elapsed, 0) for name, taken in samples.items()}
