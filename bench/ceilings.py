"""The raw work a perfect kts could not avoid, measured in the same run as the figure it bounds (bench.goals):

- ``raw_load``: start-up's reading of the tokens: plain kazoo's getChildren of the token folder, then every token
  znode read (pipelined ``get`` requests, or multiRead), each decoded with the standard JSON module into a dict;
  the ceiling is that work done by a process of its own, timed from its launch as a replica's start-up is;
- ``raw_sweep``: the sweep's writes: the tokens deleted with plain kazoo transactions of the sweeper's batch size
  (each token's znode and its notification), and an audit row per token inserted into the sweeper's SQLite file,
  one transaction per batch;
- ``raw_chain``: convergence's chain: a watch on the notification folder fires on a second client, which lists
  the folder, reads the new notification and then the token it names.

Each gives wall-clock seconds and this process's CPU seconds (``time.process_time``, kazoo's threads included).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import new_token_id
from app.storage.zk.multi_read import read_many_async
from app.storage.zk.znodes import TokenChangeZNode, TokenZNode

WINDOW = 2000  # reads in flight at once (as bench.harness.load_tokens writes)


def raw_load(zk: KazooClient, zk_connect: str) -> dict[str, Any]:
    """getChildren of the token folder, every token read and decoded into a dict. In this process, done twice: with
    plain kazoo's pipelined ``get`` requests (as the issue names it), and with ZooKeeper's multiRead (kts's own
    reader over kazoo, app/storage/zk/multi_read.py), which does the same reads with a fraction of kazoo's
    per-request Python. The ceiling is the faster way, multiRead, done by a process of its own from its launch
    (bench/raw_load_process.py): start-up is timed from the replica's launch, and a perfect kts could not avoid
    starting an interpreter, importing a ZooKeeper client and connecting either."""
    pipelined = _timed_load(zk, _read_pipelined)
    multi_read = _timed_load(zk, _read_multi)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.raw_load_process", zk_connect, TokenZNode.ROOT],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    child = json.loads(done.stdout.splitlines()[-1])
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": child["cpu_seconds"],
        "tokens": child["tokens"],
        "in_process": {"pipelined_gets": pipelined, "multi_read": multi_read},
        "note": "seconds: a process of its own (bench/raw_load_process.py), from its launch to its exit: the "
        "interpreter's start, kazoo's import, the connection, getChildren, then multiRead requests of 2000 paths, 2 "
        "in flight, and json.loads of each token; cpu_seconds: that process's. in_process: the same reads in this "
        "process, connected already, with plain kazoo's get requests pipelined 2000 at a time and with multiRead",
    }


def _timed_load(zk: KazooClient, read: Any) -> dict[str, Any]:
    started, cpu_started = time.perf_counter(), time.process_time()
    names = zk.get_children(TokenZNode.ROOT)
    paths = [TokenZNode.path(name) for name in names]
    decoded = sum(1 for data in read(zk, paths) if isinstance(json.loads(data), dict))
    return {
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu_started, 3),
        "tokens": decoded,
    }


def _read_pipelined(zk: KazooClient, paths: list[str]) -> Any:
    for first in range(0, len(paths), WINDOW):
        window = [zk.get_async(path) for path in paths[first : first + WINDOW]]
        for answer in window:
            yield answer.get()[0]


def _read_multi(zk: KazooClient, paths: list[str]) -> Any:
    batches = [paths[first : first + WINDOW] for first in range(0, len(paths), WINDOW)]
    in_flight = [read_many_async(zk, batch) for batch in batches[:2]]
    for index in range(len(batches)):
        answers = in_flight.pop(0).get()
        if index + 2 < len(batches):
            in_flight.append(read_many_async(zk, batches[index + 2]))
        for answer in answers:
            yield answer[0]


def raw_sweep(zk: KazooClient, token_ids: list[str], audit_db: Path, *, batch: int) -> dict[str, Any]:
    """Delete ``token_ids`` (expired tokens loaded for this) with one kazoo transaction per ``batch``: each token's
    znode deleted and a notification created; after each, the batch's audit rows inserted into ``audit_db``'s
    ``audit_events`` table (its indexes included) and committed. A template row is a settled sweep event of the
    kts sweep that ran before, so the rows are the same size; they are deleted again afterwards."""
    with sqlite3.connect(audit_db) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(audit_events)") if row[1] != "id"]
        template = connection.execute(
            f"SELECT {', '.join(columns)} FROM audit_events WHERE action = 'token.sweep' LIMIT 1"  # noqa: S608
        ).fetchone()
    if template is None:
        raise RuntimeError("no sweep event to copy: run the kts sweep first")
    row = dict(zip(columns, template, strict=True))
    row["action"] = "bench.raw-sweep"  # told apart from the kts sweep's events, and deleted afterwards
    insert = f"INSERT INTO audit_events ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"  # noqa: S608
    token_column = columns.index("token_id")
    values = list(row.values())

    zk.ensure_path(TokenChangeZNode.ROOT)
    connection = sqlite3.connect(audit_db, isolation_level=None)
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        for first in range(0, len(token_ids), batch):
            ids = token_ids[first : first + batch]
            transaction = zk.transaction()
            for token_id in ids:
                transaction.delete(TokenZNode.path(token_id))
                transaction.create(TokenChangeZNode.PREFIX, TokenChangeZNode.encode(token_id), sequence=True)
            results = transaction.commit()
            if any(isinstance(result, Exception) for result in results):
                raise RuntimeError(f"a raw sweep transaction failed: {results[:3]}")
            rows = []
            for token_id in ids:
                values[token_column] = token_id
                rows.append(tuple(values))
            connection.execute("BEGIN")
            connection.executemany(insert, rows)
            connection.execute("COMMIT")
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        connection.execute("DELETE FROM audit_events WHERE action = 'bench.raw-sweep'")
    finally:
        connection.close()
    return {
        "seconds": round(elapsed, 3),
        "cpu_seconds": round(cpu, 3),
        "tokens": len(token_ids),
        "batch": batch,
        "note": "plain kazoo transactions (token delete + notification) one after another, and the audit rows "
        "inserted into the sweeper's SQLite audit_events (same indexes) one transaction per batch",
    }


def raw_chain(writer: KazooClient, follower: KazooClient, changes: int) -> dict[str, Any]:
    """From a create's answer on ``writer`` to ``follower`` having read the token: the follower's watch on the
    notification folder wakes a thread (kazoo's watch thread must not wait on requests), which lists the folder
    (leaving the next watch), reads the newest notification, then the token it names."""
    fired = threading.Event()
    done = threading.Event()
    finished_at = [0.0]
    stop = False

    def watch(_: Any) -> None:
        fired.set()

    def follow() -> None:
        while True:
            fired.wait()
            fired.clear()
            if stop:
                return
            names = follower.get_children(TokenChangeZNode.ROOT, watch=watch)
            data, _ = follower.get(f"{TokenChangeZNode.ROOT}/{max(names)}")
            follower.get(TokenZNode.path(TokenChangeZNode.decode(data)))
            finished_at[0] = time.perf_counter()
            done.set()

    writer.ensure_path(TokenChangeZNode.ROOT)
    follower.get_children(TokenChangeZNode.ROOT, watch=watch)
    thread = threading.Thread(target=follow, name="raw-chain", daemon=True)
    thread.start()
    owner = KafkaPrincipal.user("ceiling")
    now = int(time.time() * 1000)
    delays = []
    try:
        for _ in range(changes):
            done.clear()
            token_id = new_token_id()
            token = TokenInformation(token_id, owner, owner, (), now, now + 86_400_000, now + 604_800_000)
            transaction = writer.transaction()
            transaction.create(TokenZNode.path(token_id), TokenZNode.encode(token))
            transaction.create(TokenChangeZNode.PREFIX, TokenChangeZNode.encode(token_id), sequence=True)
            transaction.commit()
            answered = time.perf_counter()
            if not done.wait(30):
                raise RuntimeError("the raw chain's watch never fired")
            delays.append(max(0.0, finished_at[0] - answered))
    finally:
        stop = True
        fired.set()
        thread.join(5)
    delays.sort()
    return {
        "p50_ms": round(statistics.median(delays) * 1000, 2),
        "p99_ms": round(delays[max(0, int(len(delays) * 0.99) - 1)] * 1000, 2),
        "changes": changes,
        "note": "plain kazoo: from the writer's transaction (token + notification) answered to the follower having "
        "listed the notification folder, read the newest notification and the token (a thread woken by the watch)",
    }
