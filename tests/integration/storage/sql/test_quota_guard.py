"""Exact token quotas across replicas without ZooKeeper: SqlQuotaGuard on a real PostgreSQL (and SQLite for one
replica) under the real ``TokenQuotas`` service, with creates sent to a fake in-process "cluster"
(tests/fake_cluster.py) standing in for the controller: the Kafka-protocol adapter is another part's, and the
same race runs against the real KRaft broker once it is wired (tests/kafka/). Each replica has its own
engine (its own connections, as separate processes would), its own cache of the cluster, and its own
``TokenQuotas``; replicas share only the database and the cluster.

What the quota promises: the cluster never holds more live tokens for an owner than ``token.quota.per.owner``,
whatever the interleaving, while tokens also go away meanwhile (expired elsewhere) so that creates keep being
admitted. The peak is counted by the cluster itself, in the transaction of each create.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Engine

from app.domain.acl import AclAuthorizer, AclSnapshot
from app.domain.clock import SystemClock
from app.domain.errors import StoreUnavailable, TokenQuotaExceeded
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_quota import QuotaKey, QuotaKind, TokenQuota, counts_against
from app.service.ports import StoredToken
from app.service.token_quotas import TokenQuotas
from app.storage.sql.quota_guard import SqlQuotaGuard
from tests.api.helpers import eventually
from tests.fake_cluster import FakeCluster

ROOT = Path(__file__).resolve().parents[4]
KTS = KafkaPrincipal.user("kts")
ALICE = KafkaPrincipal.user("alice")
ALICE_QUOTA = QuotaKey(QuotaKind.OWNER, ALICE)
QUOTA = 5


class ClusterView:
    """This replica's cache of the cluster, as far as the quota uses it (``TokenView``'s ``live_count``,
    ``catch_up``, ``apply``): a catch-up lists the cluster, as the Kafka-protocol cache's describe does. The
    cluster names kts as the requester of what kts made; the real cache puts back the caller recorded in the
    token requesters table, here alice, who creates for herself."""

    def __init__(self, cluster: FakeCluster) -> None:
        self._cluster = cluster
        self._tokens: dict[str, TokenInformation] = {}
        self._lock = threading.Lock()
        self.catch_ups = 0

    def catch_up(self) -> None:
        with self._lock:
            self._tokens = {token.token_id: _as_requested(token) for token in self._cluster.list_tokens()}
            self.catch_ups += 1

    def apply(self, stored: StoredToken) -> None:
        with self._lock:
            self._tokens[stored.token.token_id] = _as_requested(stored.token)

    def live_count(self, key: QuotaKey, now_ms: int) -> int:
        with self._lock:
            return sum(1 for token in self._tokens.values() if counts_against(key, token, now_ms))


def _as_requested(token: TokenInformation) -> TokenInformation:
    return replace(token, token_requester=token.owner) if token.token_requester == KTS else token


class Replica:
    def __init__(self, engine: Engine, cluster: FakeCluster, *, guard: SqlQuotaGuard | None = None) -> None:
        self.cluster = cluster
        self.guard = guard or SqlQuotaGuard(engine)
        self.view = ClusterView(cluster)
        self.quotas = TokenQuotas(
            TokenQuota(per_owner=QUOTA),
            self.view,  # type: ignore[arg-type]  # the part of TokenView the quota uses
            clock=SystemClock(),
            authorizer=AclAuthorizer([], AclSnapshot),
        )
        self.after_admit: Callable[[], None] = lambda: None

    def create(self) -> TokenInformation:
        """A create for alice as the Kafka-protocol store makes it: a turn on the quotas, the judgement, the
        RPC (the cluster picks the id and records kts as the requester)."""
        planned = TokenInformation("planned", ALICE, ALICE, (), 0, 0, 0)

        def write(keys: Sequence[QuotaKey], admit: Callable[[Mapping[QuotaKey, int]], None]) -> StoredToken:
            with self.guard.hold(keys) as versions:
                admit(versions)
                self.after_admit()
                return StoredToken(self.cluster.create(requester=KTS, owner=ALICE, renewers=(KTS,)), 0)

        return self.quotas.create(planned, write).token


def test_two_replicas_on_eight_threads_each_never_exceed_the_quota(
    postgres_db: str, engines: Callable[[str], Engine], tmp_path: Path
) -> None:
    cluster = FakeCluster(tmp_path / "cluster.db")
    replicas = [Replica(engines(postgres_db), cluster), Replica(engines(postgres_db), cluster)]
    attempts = 200
    created: list[str] = []
    refused: list[int] = []
    failures: list[BaseException] = []
    record = threading.Lock()

    def client(replica: Replica, seed: int) -> None:
        rng = random.Random(seed)
        for attempt in range(attempts // 16 + (seed < attempts % 16)):
            try:
                token = replica.create()
                with record:
                    created.append(token.token_id)
            except TokenQuotaExceeded:
                with record:
                    refused.append(1)
            except BaseException as exc:  # reported below, not lost in a thread
                failures.append(exc)
                return
            if attempt % 3 == 2:  # a token of alice's expires elsewhere: room for more creates
                held = [token for token in cluster.list_tokens() if token.owner == ALICE]
                if held:
                    cluster.delete(rng.choice(held).token_id)

    threads = [threading.Thread(target=client, args=(replicas[n % 2], n), name=f"client-{n}") for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)

    assert failures == []
    assert len(created) + len(refused) == attempts
    assert cluster.peak(ALICE) == QUOTA  # reached (positive control), never passed
    assert len(created) > QUOTA  # expiries elsewhere made room again and again
    assert refused  # and the quota refused meanwhile
    print(
        f"\nquota {QUOTA}: 2 replicas x 8 threads, {attempts} attempts ({len(created)} created, "
        f"{len(refused)} refused, tokens expired meanwhile), max live {cluster.peak(ALICE)}"
    )


class _NoTurns(SqlQuotaGuard):
    """Versions without turns: what the quota would be without the guard's lock."""

    def __init__(self) -> None:
        pass

    @contextmanager
    def hold(self, keys: Sequence[QuotaKey]) -> Iterator[dict[QuotaKey, int]]:
        yield {key: -1 for key in keys}


def test_positive_control_without_turns_replicas_racing_pass_the_quota(
    postgres_db: str, engines: Callable[[str], Engine], tmp_path: Path
) -> None:
    """The test above can see an excess: eight replicas that judge before any of them creates (a barrier
    between judgement and RPC) all get in when nothing makes them take turns."""
    cluster = FakeCluster(tmp_path / "cluster.db")
    barrier = threading.Barrier(8, timeout=60)
    replicas = [Replica(engines(postgres_db), cluster, guard=_NoTurns()) for _ in range(8)]
    for replica in replicas:
        replica.after_admit = barrier.wait
    threads = [threading.Thread(target=replica.create) for replica in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert cluster.peak(ALICE) == 8 > QUOTA


def test_one_replica_on_sqlite_with_eight_threads_never_exceeds_the_quota(
    tmp_path: Path, engines: Callable[[str], Engine]
) -> None:
    from app.storage.audit import migrations

    url = f"sqlite:///{tmp_path / 'audit.db'}"
    engine = engines(url)
    migrations.upgrade(engine)
    cluster = FakeCluster(tmp_path / "cluster.db")
    replica = Replica(engine, cluster)
    outcomes: list[str] = []

    def client() -> None:
        for _ in range(10):
            try:
                replica.create()
                outcomes.append("created")
            except TokenQuotaExceeded:
                outcomes.append("refused")

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert outcomes.count("created") == QUOTA == cluster.peak(ALICE)
    assert outcomes.count("refused") == 80 - QUOTA


def test_a_replica_catches_up_only_when_another_created_since_its_last_turn(
    postgres_db: str, engines: Callable[[str], Engine], tmp_path: Path
) -> None:
    cluster = FakeCluster(tmp_path / "cluster.db")
    first, second = Replica(engines(postgres_db), cluster), Replica(engines(postgres_db), cluster)
    first.create()
    assert first.view.catch_ups == 1  # no version known yet
    first.create()
    assert first.view.catch_ups == 1  # the version is where its own turn left it

    second.create()
    first.create()
    assert first.view.catch_ups == 2  # the other replica's turn moved the version: caught up first


KILLED_HOLDER = """
import os, signal, sys
from app.domain.principal import KafkaPrincipal
from app.domain.token_quota import QuotaKey, QuotaKind
from app.storage.audit.database import make_engine
from app.storage.sql.quota_guard import SqlQuotaGuard
from tests.fake_cluster import FakeCluster

guard = SqlQuotaGuard(make_engine(sys.argv[1]))
alice = KafkaPrincipal.user("alice")
with guard.hold([QuotaKey(QuotaKind.OWNER, alice)]):
    if sys.argv[3] == "after-rpc":
        FakeCluster(sys.argv[2]).create(requester=KafkaPrincipal.user("kts"), owner=alice)
    print("holding", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("killed", ["before-rpc", "after-rpc"])
def test_a_replica_killed_holding_a_quota_frees_it_and_its_create_is_counted(
    killed: str, postgres_db: str, engines: Callable[[str], Engine], tmp_path: Path
) -> None:
    """SIGKILL mid-create: PostgreSQL drops the dead replica's lock with its connection, so nobody waits on
    it; its turn was never settled, so the next turn refuses (503, retry) until the RPC it may have sent has
    landed or never will, then counts what the cluster holds, the dead replica's token included."""
    cluster = FakeCluster(tmp_path / "cluster.db")
    for _ in range(QUOTA - 1):
        cluster.create(requester=KTS, owner=ALICE)
    in_flight_ms = 3000
    survivor = Replica(
        engines(postgres_db), cluster, guard=SqlQuotaGuard(engines(postgres_db), in_flight_ms=in_flight_ms)
    )
    child = subprocess.run(
        [sys.executable, "-c", KILLED_HOLDER, postgres_db, str(cluster.path), killed],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode == -9 and child.stdout == b"holding\n", child.stderr.decode()

    with pytest.raises(StoreUnavailable, match="interrupted and may still land"):
        survivor.create()  # at once: the dead replica's lock is gone with its connection

    def settled() -> bool:
        try:
            survivor.create()
        except StoreUnavailable:
            return False
        except TokenQuotaExceeded:
            return killed == "after-rpc"  # the dead replica's token took the last unit
        return killed == "before-rpc"

    eventually(settled, timeout_s=60)
    assert cluster.peak(ALICE) == QUOTA
