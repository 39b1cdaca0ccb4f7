"""What the fault matrix (test_fault_matrix.py) drives: ``kts serve`` replicas that can be SIGKILLed and
restarted in place (same name, same port), a client stream that records every request it makes, the
ZooKeeper ensemble's members paused and healed, and tokens written straight into ZooKeeper the way a
broker would have written them."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
from kazoo.client import KazooClient

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import new_token_id
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode
from tests.conftest import seed_kafka_cluster
from tests.e2e.conftest import KTS, ROOT, kts_env, wait_ready
from tests.zookeeper_ensemble import ZooKeeperEnsemble

REQUEST_TIMEOUT_S = 20.0  # above kts's own ZooKeeper request time-out (10 s): kts answers first
# After a 503 or no answer a thread waits this long before its next request. A real client waits the
# Retry-After (2 s); the stream probes sooner to see recovery closely, but not in a loop that would starve
# the ZooKeeper servers and replicas of the two cores they share with it.
BACKOFF_S = 0.2


@dataclass
class Replica:
    """One ``kts serve`` process; ``launch`` after ``kill`` starts it again under the same name and port, so
    start-up reconciliation settles the audit events it left pending (they carry its service id)."""

    name: str
    port: int
    settings: dict[str, str]
    log_dir: Path
    process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> None:
        env = kts_env(KTS_HTTP_LISTENERS=self.url, KTS_SERVICE_ID=self.name, **self.settings)
        with (self.log_dir / f"{self.name}.log").open("a") as log:  # one log across restarts
            self.process = subprocess.Popen(
                [*KTS, "serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
            )

    def wait_ready(self) -> None:
        assert self.process is not None
        wait_ready(self.url, self.process, timeout_s=60)

    def kill(self) -> None:
        """SIGKILL: no goodbye, requests in flight are cut and its ZooKeeper session lingers until it expires."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.terminate()

    def wait_stopped(self) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def cached_tokens(self) -> int:
        """The tokens in the replica's cache (its ``kts_tokens`` gauge); -1 while it does not answer."""
        try:
            text = httpx.get(f"{self.url}/metrics", timeout=2).text
        except httpx.HTTPError:
            return -1
        found = re.search(r"^kts_tokens (\S+)$", text, re.MULTILINE)
        return -1 if found is None else int(float(found.group(1)))

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def launch_all(replicas: list[Replica]) -> None:
    """Start every replica at once (they share two cores better than one after the other), then wait."""
    for replica in replicas:
        replica.launch()
    for replica in replicas:
        replica.wait_ready()


def launch_on_empty_database(replicas: list[Replica]) -> None:
    """The first replica alone, then the others: replicas started together on an empty audit database race
    to create the schema, and the losers exit (reported to the lead; a restart recovers them)."""
    launch_all(replicas[:1])
    launch_all(replicas[1:])


def stop_all(replicas: list[Replica]) -> None:
    for replica in replicas:
        replica.stop()
    for replica in replicas:
        replica.wait_stopped()


def restart_all(replicas: list[Replica]) -> None:
    """Stop the replicas (SIGTERM: requests in flight finish), then start them again: each settles its own
    pending audit events at start-up, whatever their age (the periodic pass only settles events older than
    a minute)."""
    stop_all(replicas)
    launch_all(replicas)


def open_chroot(ensemble: ZooKeeperEnsemble, chroot: str) -> KazooClient:
    """A kazoo client on a fresh chroot of the ensemble, as a broker or an operator would connect; the chroot
    holds the /cluster/id a broker writes (kts refuses a chroot without one)."""
    seed_kafka_cluster(ensemble.connect_string, chroot)
    client = KazooClient(hosts=ensemble.connect_string + chroot)
    client.start(15)
    return client


def pause(ensemble: ZooKeeperEnsemble, index: int) -> None:
    """SIGSTOP a member: its sockets stay open but it answers nothing, as a server stuck in a long GC pause."""
    process = ensemble.members[index].process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)


def resume(ensemble: ZooKeeperEnsemble, index: int) -> None:
    process = ensemble.members[index].process
    if process is not None and process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)


def heal(ensemble: ZooKeeperEnsemble) -> None:
    """Every member running and the quorum formed, whatever an earlier fault (or failed test) left behind."""
    for index, member in enumerate(ensemble.members):
        resume(ensemble, index)
        if member.process is None or member.process.poll() is not None:
            ensemble.restart(index)
    ensemble.wait_for_quorum()


def load_tokens(
    zk: KazooClient,
    count: int,
    *,
    expiry_ms: int,
    owner: KafkaPrincipal | None = None,
    per_transaction: int = 250,
) -> list[str]:
    """Write ``count`` tokens expiring at ``expiry_ms`` straight into ZooKeeper, as bench/harness.py's
    ``load_tokens`` does, each with the change notification a broker writes beside it (so running replicas
    cache them); several tokens per transaction, pipelined, so the caches take them in a few gulps. Owned by
    ``owner``, else by a hundred users in turn."""
    zk.ensure_path(TokenZNode.ROOT)
    zk.ensure_path(TokenChangeZNode.ROOT)
    now = int(time.time() * 1000)
    ids: list[str] = []
    in_flight: list[Any] = []
    for start in range(0, count, per_transaction):
        transaction = zk.transaction()
        for n in range(start, min(count, start + per_transaction)):
            token_id = new_token_id()
            holder = owner or KafkaPrincipal.user(f"u{n % 100}")
            token = TokenInformation(token_id, holder, holder, (), now - 2000, expiry_ms, now + 604_800_000)
            transaction.create(TokenZNode.path(token_id), TokenZNode.encode(token))
            transaction.create(TokenChangeZNode.PREFIX, TokenChangeZNode.encode(token_id), sequence=True)
            ids.append(token_id)
        in_flight.append(transaction.commit_async())
    _settle(in_flight)
    return ids


def _settle(in_flight: list[Any]) -> None:
    for result in in_flight:
        outcomes = result.get()
        assert not any(isinstance(outcome, Exception) for outcome in outcomes), outcomes
    in_flight.clear()


@dataclass(frozen=True)
class Answer:
    """One request of the stream and how it ended; ``status`` None means no answer (refused, cut, timed out)."""

    operation: str  # create | renew | expire
    replica: str
    request_id: str
    token_id: str | None
    status: int | None
    retry_after: bool
    body: dict[str, Any]
    sent_at: float  # time.monotonic()
    answered_at: float

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class ClientStream:
    """A few threads creating, renewing and expiring tokens as fast as they are answered, each request sent
    to the next replica in turn (a simple round-robin balancer). Every request is recorded."""

    replicas: list[Replica]
    headers: dict[str, str]
    threads: int = 4
    answers: list[Answer] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopped: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)
    _turn: Callable[[], int] = field(default_factory=lambda: itertools.count().__next__)
    _in_flight: Counter[tuple[str, str]] = field(default_factory=Counter)  # (replica, operation) -> requests

    def start(self) -> None:
        self._workers = [threading.Thread(target=self._work, daemon=True) for _ in range(self.threads)]
        for worker in self._workers:
            worker.start()

    def stop(self) -> None:
        self._stopped.set()
        for worker in self._workers:
            worker.join(REQUEST_TIMEOUT_S + 5)
        assert not any(worker.is_alive() for worker in self._workers), "a client thread is stuck"

    def in_flight(self, replica: str, operation: str) -> int:
        with self._lock:
            return self._in_flight[replica, operation]

    def snapshot(self) -> list[Answer]:
        with self._lock:
            return list(self.answers)

    def _work(self) -> None:
        mine: list[dict[str, Any]] = []  # acknowledged creates still in use (with their HMAC)
        with httpx.Client(headers=self.headers, timeout=REQUEST_TIMEOUT_S) as client:
            for round_number in itertools.count():
                if self._stopped.is_set():
                    return
                created = self._send(client, "create", None, "/v1/tokens", {})
                if created.status == 201:
                    mine.append(created.body)
                for token in mine[-2:]:
                    self._send(client, "renew", token["tokenId"], "/v1/tokens/renew", {"hmac": token["hmac"]})
                if round_number % 4 == 3 and len(mine) > 3:
                    # Once an expire was sent its token is left alone, answered or not: it may be gone.
                    victim = mine.pop(0)
                    path = f"/v1/tokens/{victim['tokenId']}/expire"
                    self._send(client, "expire", victim["tokenId"], path, {"expiryTimePeriodMs": -1})

    def _send(
        self, client: httpx.Client, operation: str, token_id: str | None, path: str, body: dict[str, Any]
    ) -> Answer:
        replica = self.replicas[self._turn() % len(self.replicas)]
        request_id = uuid.uuid4().hex
        sent_at = time.monotonic()
        status: int | None = None
        retry_after = False
        payload: dict[str, Any] = {}
        with self._lock:
            self._in_flight[replica.name, operation] += 1
        try:
            response = client.post(replica.url + path, json=body, headers={"X-Request-ID": request_id})
            status = response.status_code
            retry_after = "retry-after" in response.headers
            if response.headers.get("content-type", "").startswith("application/json"):
                payload = response.json()
        except httpx.HTTPError:
            pass
        if operation == "create" and status == 201:
            token_id = payload["tokenId"]
        safe = {key: value for key, value in payload.items() if key != "hmac"}
        answer = Answer(
            operation, replica.name, request_id, token_id, status, retry_after, safe, sent_at, time.monotonic()
        )
        with self._lock:
            self._in_flight[replica.name, operation] -= 1
            self.answers.append(answer)
        if status is None or status == 503:
            self._stopped.wait(BACKOFF_S)
        if operation == "create" and status == 201:
            return replace(answer, body=payload)  # the caller keeps the HMAC, the record does not
        return answer


def wait_recovered(stream: ClientStream, healed_at: float, timeout_s: float = 90.0) -> float:
    """Wait until every replica is ready and has acknowledged a create sent after ``healed_at``; returns
    the moment (time.monotonic()) the last of those acknowledgements arrived."""
    deadline = time.monotonic() + timeout_s
    names = {replica.name for replica in stream.replicas}
    while time.monotonic() < deadline:
        first: dict[str, float] = {}
        for answer in stream.snapshot():
            if answer.operation == "create" and answer.acknowledged and answer.sent_at >= healed_at:
                first.setdefault(answer.replica, answer.answered_at)
        if set(first) == names and all(replica.ready() for replica in stream.replicas):
            return max(first.values())
        time.sleep(0.1)
    raise AssertionError(f"not every replica recovered within {timeout_s} s: {_since(stream, healed_at)}")


def _since(stream: ClientStream, healed_at: float) -> str:
    """Each replica's readiness and what its creates sent after ``healed_at`` were answered (None: no answer)."""
    parts = []
    for replica in stream.replicas:
        statuses = Counter(
            answer.status
            for answer in stream.snapshot()
            if answer.replica == replica.name and answer.operation == "create" and answer.sent_at >= healed_at
        )
        answered = ", ".join(f"{count} x {status}" for status, count in statuses.most_common()) or "none sent"
        parts.append(f"{replica.name} {'ready' if replica.ready() else 'not ready'}, creates {answered}")
    return "; ".join(parts)
