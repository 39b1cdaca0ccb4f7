"""Two kts replicas on a real KRaft cluster (Kafka 4.x) sharing a real PostgreSQL audit database, where
ZooKeeper would have shared their state: a lock one replica takes refuses logins on the other; a token quota
holds exactly under two replicas on eight threads each; and replicas killed with SIGKILL in the middle of
creates leave an audit trail that settles with every token kts made on the cluster shown once."""

from __future__ import annotations

import getpass
import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.domain.audit import EventQuery, StoredEvent
from app.domain.clock import SystemClock
from app.domain.principal import KafkaPrincipal
from app.domain.token import TokenInformation
from app.domain.token_secret import TokenSecret
from app.service.cluster_audit import ClusterAuditReconciler
from app.settings import load_settings
from app.storage.audit.database import make_engine
from app.storage.audit.sink import SqlAuditLog
from app.storage.kafka.assembly import kafka_cluster
from app.storage.sql.intent_marks import SqlIntentMarks
from app.storage.sql.token_requesters import SqlTokenRequesters
from tests.api.backends import User, kafka_settings
from tests.api.helpers import eventually
from tests.e2e.cli_helpers import client_env, run_kts
from tests.e2e.conftest import start_kts
from tests.kafka.brokers import RunningBroker
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[3]
QUOTA = 5


def _user(broker: RunningBroker, prefix: str) -> User:
    made = broker.new_user(prefix)
    return User(made.name, made.password)


@pytest.fixture
def replicas(kafka_kraft_broker: RunningBroker, postgres: PostgresServer) -> Iterator[list[TestClient]]:
    """Two replicas (each its own runtime, connections and caches) on one KRaft broker and one PostgreSQL."""
    settings = kafka_settings(kafka_kraft_broker, postgres.create_database())
    settings |= {"auth_lockout_threshold": 4, "token_quota_per_owner": QUOTA}
    clients = []
    for name in ("replica-a", "replica-b"):
        client = TestClient(
            create_app(load_settings(**{**settings, "service_id": name})), raise_server_exceptions=False
        )
        client.__enter__()
        clients.append(client)
    yield clients
    for client in clients:
        client.__exit__(None, None, None)


def _replicas_seen(client: TestClient) -> int:
    return int(client.app.state.runtime.readings().replicas())  # type: ignore[attr-defined]


def test_a_lock_taken_on_one_replica_refuses_logins_on_the_other(
    kafka_kraft_broker: RunningBroker, replicas: list[TestClient]
) -> None:
    first, second = replicas
    alice = _user(kafka_kraft_broker, "alice")
    eventually(lambda: _replicas_seen(first) == 2 and _replicas_seen(second) == 2, timeout_s=60)
    wrong = User(alice.name, "not-the-password")
    assert second.get("/v1/tokens", headers=alice.basic).status_code == 200

    statuses = [first.get("/v1/tokens", headers=wrong.basic).status_code for _ in range(2)]  # 4 / 2 replicas

    assert statuses == [401, 401]
    assert first.get("/v1/tokens", headers=alice.basic).status_code == 429  # at once where it was taken
    took_s = eventually(lambda: second.get("/v1/tokens", headers=alice.basic).status_code == 429, timeout_s=30)
    refused = second.get("/v1/tokens", headers=alice.basic)
    assert refused.json()["error"] == "ACCOUNT_LOCKED" and int(refused.headers["Retry-After"]) > 0
    print(f"\nKRaft, 2 replicas: a lock taken on one refused the right password on the other after {took_s:.2f} s")


def test_kts_lockout_lists_and_releases_a_lock_in_the_audit_database(
    kafka_kraft_broker: RunningBroker, replicas: list[TestClient]
) -> None:
    """Through the Kafka protocol the replicas share their locks in the audit database: ``kts lockout``, given the
    replicas' KTS_* environment, lists and releases them there while every HTTP login of the account is refused,
    and the release is audited with the operating-system user."""
    first, second = replicas
    alice = _user(kafka_kraft_broker, "alice")
    admin = User(kafka_kraft_broker.admin.name, kafka_kraft_broker.admin.password)
    eventually(lambda: _replicas_seen(first) == 2 and _replicas_seen(second) == 2, timeout_s=60)
    wrong = User(alice.name, "not-the-password")
    assert [first.get("/v1/tokens", headers=wrong.basic).status_code for _ in range(2)] == [401, 401]
    eventually(lambda: second.get("/v1/tokens", headers=alice.basic).status_code == 429, timeout_s=30)
    assert first.get("/v1/tokens", headers=alice.basic).status_code == 429

    runtime = first.app.state.runtime  # type: ignore[attr-defined]
    settings = kafka_settings(kafka_kraft_broker, runtime.settings.audit_db_url) | {"auth_lockout_threshold": 4}
    env = client_env(**{f"KTS_{key.upper()}": str(value) for key, value in settings.items()})
    listed = run_kts("lockout", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert re.fullmatch(rf"User:{alice.name}\tuntil \S+Z \(\d+ s\)\n", listed.stdout), listed.stdout
    released = run_kts("lockout", "release", alice.name, env=env)
    assert released.returncode == 0, released.stderr
    assert released.stdout == f"released User:{alice.name} on every replica (was locked); audited as lockout.release\n"
    for replica in replicas:  # each reads the table within a second
        eventually(lambda replica=replica: replica.get("/v1/tokens", headers=alice.basic).status_code == 200)
    events = first.get("/v1/audit?action=lockout.release", headers=admin.basic).json()["events"]
    assert [(e["owner"], e["outcome"], e["details"]) for e in events] == [
        (f"User:{alice.name}", "succeeded", {"operatingSystemUser": getpass.getuser(), "wasLocked": True})
    ]
    assert run_kts("lockout", "list", env=env).stdout == "no account is locked\n"


def test_a_quota_holds_under_two_replicas_on_eight_threads_each(
    kafka_kraft_broker: RunningBroker, replicas: list[TestClient]
) -> None:
    alice = _user(kafka_kraft_broker, "alice")
    attempts = 48
    statuses: list[int] = []
    record = threading.Lock()

    def client(app: TestClient, count: int) -> None:
        for _ in range(count):
            status = app.post("/v1/tokens", json={}, headers=alice.basic).status_code
            with record:
                statuses.append(status)

    threads = [threading.Thread(target=client, args=(replicas[n % 2], attempts // 16)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)

    assert sorted(set(statuses)) == [201, 429], statuses
    assert statuses.count(201) == QUOTA
    held = [token for token in _cluster_tokens(kafka_kraft_broker) if token.owner == KafkaPrincipal.user(alice.name)]
    assert len(held) == QUOTA  # none expires meanwhile: what the cluster holds now is the most it held
    print(
        f"\nquota {QUOTA} on KRaft: 2 replicas x 8 threads, {attempts} attempts, {statuses.count(201)} created, "
        f"{statuses.count(429)} refused, max live {len(held)}"
    )


def _cluster_tokens(broker: RunningBroker) -> list[TokenInformation]:
    """What the controller holds, read by a connection of the test's own."""
    settings = load_settings(**kafka_settings(broker, "sqlite://"))
    cluster = kafka_cluster(settings)
    cluster.start(TokenSecret(broker.secret))
    try:
        return cluster.list_tokens()
    finally:
        cluster.stop()


def _settle(broker: RunningBroker, audit_url: str) -> None:
    """The reconciler the leader runs, with no grace period: no request of the killed replicas is in flight."""
    settings = load_settings(**kafka_settings(broker, audit_url))
    cluster = kafka_cluster(settings)
    cluster.start(TokenSecret(broker.secret))
    engine = make_engine(audit_url)
    clock = SystemClock()
    audit_log = SqlAuditLog(engine, service_id="settler", clock=clock)
    try:
        ClusterAuditReconciler(
            audit_log,
            SqlTokenRequesters(engine, audit_log, service_id="settler"),
            cluster,
            SqlIntentMarks(engine, clock=clock),
            clock=clock,
            own_principal=lambda: cluster.principal,
            default_renew_ms=settings.delegation_token_expiry_time_ms,
            grace_ms=0,
        ).reconcile()
    finally:
        cluster.stop()
        engine.dispose()


def _trail_shows_each_token_once(
    broker: RunningBroker, audit_url: str, owner: KafkaPrincipal
) -> tuple[list[StoredEvent], list[TokenInformation]]:
    engine = make_engine(audit_url)
    events = SqlAuditLog(engine, service_id="test", clock=SystemClock()).query(EventQuery(limit=1000))
    requesters = SqlTokenRequesters(
        engine, SqlAuditLog(engine, service_id="test", clock=SystemClock()), service_id="test"
    )
    tokens = [token for token in _cluster_tokens(broker) if token.owner == owner]
    assert [event for event in events if event.outcome == "pending"] == []
    for token in tokens:
        creates = [e for e in events if e.token_id == token.token_id and e.action == "token.create"]
        assert [e.outcome for e in creates] == ["succeeded"], token
    assert requesters.requesters([token.token_id for token in tokens]) == {token.token_id: owner for token in tokens}
    engine.dispose()
    return events, tokens


@pytest.mark.parametrize("kill_point", ["before-rpc", "after-rpc", "after-record", "none"])
def test_a_replica_killed_at_any_point_of_a_create_leaves_a_trail_that_settles(
    kafka_kraft_broker: RunningBroker, postgres: PostgresServer, kill_point: str
) -> None:
    audit_url = postgres.create_database()
    alice = _user(kafka_kraft_broker, "alice")
    settings = kafka_settings(kafka_kraft_broker, audit_url) | {"service_id": "doomed"}
    child = subprocess.run(
        [sys.executable, "-m", "tests.e2e.kafka.create_and_die", json.dumps(settings), alice.name, kill_point],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
    )
    assert child.returncode == (0 if kill_point == "none" else -9), child.stderr.decode()[-3000:]

    _settle(kafka_kraft_broker, audit_url)

    owner = KafkaPrincipal.user(alice.name)
    events, tokens = _trail_shows_each_token_once(kafka_kraft_broker, audit_url, owner)
    (create,) = [event for event in events if event.action == "token.create" and event.owner == str(owner)]
    assert create.outcome == ("failed" if kill_point == "before-rpc" else "succeeded")
    assert len(tokens) == (0 if kill_point == "before-rpc" else 1)


def test_replicas_killed_in_the_middle_of_a_stream_of_creates_leave_a_trail_that_settles(
    kafka_kraft_broker: RunningBroker,
    postgres: PostgresServer,
    processes: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    """Real ``kts serve`` replicas; eight clients create tokens through one of them, which is killed with
    SIGKILL while its requests are in flight; the other replica goes on serving."""
    audit_url = postgres.create_database()
    alice = _user(kafka_kraft_broker, "alice")
    env = {f"KTS_{key.upper()}": str(value) for key, value in kafka_settings(kafka_kraft_broker, audit_url).items()}
    env |= {"KTS_AUDIT_DB_URL": audit_url, "KTS_AUTH_FAILURES_MAX": "0"}
    del env["KTS_SERVICE_ID"]  # each replica its own
    doomed = start_kts(processes, tmp_path, "doomed", **env)
    survivor = start_kts(processes, tmp_path, "survivor", **env)
    created: list[str] = []
    failed: list[int] = []
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            try:
                answer = httpx.post(f"{doomed}/v1/tokens", json={}, headers=alice.basic, timeout=30)
            except httpx.HTTPError:
                failed.append(1)
                return
            if answer.status_code == 201:
                created.append(answer.json()["tokenId"])

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    eventually(lambda: len(created) >= 20, timeout_s=120)
    processes[0].send_signal(signal.SIGKILL)
    processes[0].wait(30)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert httpx.get(f"{survivor}/v1/tokens", headers=alice.basic).status_code == 200

    _settle(kafka_kraft_broker, audit_url)

    events, tokens = _trail_shows_each_token_once(kafka_kraft_broker, audit_url, KafkaPrincipal.user(alice.name))
    assert set(created) <= {token.token_id for token in tokens}
    interrupted = len(tokens) - len(created)
    settled = sum(1 for event in events if event.details.get("reconciled"))
    print(
        f"\nSIGKILL mid-create on KRaft: {len(created)} creates answered, {len(failed)} cut off, {len(tokens)} tokens "
        f"on the cluster ({interrupted} made by requests the kill cut off), {settled} events settled by the reconciler"
    )
