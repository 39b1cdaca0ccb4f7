"""``kts serve`` as a process: a properties file with broker key names, env overrides, refusal to start."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, free_port
from tests.api.conftest import ADMIN, ALICE, basic, put_user
from tests.conftest import SECRET, write_properties
from tests.e2e.conftest import KTS, ROOT, kts_env, start_kts, wait_ready


def test_serves_tokens_from_a_broker_style_properties_file(
    tmp_path: Path, zk_connect: str, raw_zk: KazooClient, processes: list[subprocess.Popen[str]]
) -> None:
    put_user(raw_zk, *ALICE)
    port = free_port()
    config = write_properties(
        tmp_path / "server.properties",
        {
            "broker.id": "1",
            "log.dirs": "/ignored",
            "zookeeper.connect": zk_connect,
            "delegation.token.secret.key": "from-the-file",
            "delegation.token.max.lifetime.ms": "3600000",
        },
    )
    process = subprocess.Popen(
        [*KTS, "serve", "--config", str(config)],
        cwd=ROOT,
        env=kts_env(KTS_HTTP_LISTENERS=f"http://127.0.0.1:{port}", KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    processes.append(process)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, process)
    response = httpx.post(f"{url}/v1/tokens", json={}, headers=basic(ALICE))
    assert response.status_code == 201
    token = response.json()
    assert token["maxTimestamp"] - token["issueTimestamp"] == 3_600_000  # from the file
    verified = httpx.post(
        f"{url}/v1/tokens/verify", json={"tokenId": token["tokenId"], "hmac": token["hmac"]}, headers=basic(ALICE)
    )
    assert verified.status_code == 200  # the environment's secret won over the file's
    process.terminate()
    output, _ = process.communicate(timeout=15)
    assert process.returncode == 0
    for secret in (SECRET, "from-the-file", token["hmac"], ALICE[1]):
        assert secret not in output


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"delegation.token.secret.key": "never-echo-this-secret"}, "zookeeper.connect"),
        ({"zookeeper.connect": "127.0.0.1:2181"}, "delegation.token.secret.key"),
        (
            {
                "zookeeper.connect": "127.0.0.1:2181",
                "delegation.token.secret.key": "never-echo-this-secret",
                "token.znode.version": "2",
            },
            "token.znode.version",
        ),
        (
            {"zookeeper.connect": "nonsense", "delegation.token.secret.key": "never-echo-this-secret"},
            "zookeeper.connect",
        ),
        (
            {
                "zookeeper.connect": "127.0.0.1:2181",
                "delegation.token.secret.key": "never-echo-this-secret",
                "delegation.token.max.lifetime.ms": "-5",
            },
            "delegation.token.max.lifetime.ms",
        ),
        (
            {
                "zookeeper.connect": "127.0.0.1:2181",
                "delegation.token.secret.key": "never-echo-this-secret",
                "http.management.listeners": "0.0.0.0:9090",
            },
            "http.management.listeners",
        ),
        (
            {
                "zookeeper.connect": "127.0.0.1:2181",
                "delegation.token.secret.key": "never-echo-this-secret",
                "sasl.oauthbearer.principal.prefix": "jwt *",
            },
            "sasl.oauthbearer.principal.prefix",
        ),
    ],
)
def test_refuses_to_start_with_one_line_naming_the_key(tmp_path: Path, values: dict[str, str], key: str) -> None:
    config = write_properties(tmp_path / "kts.properties", values)
    result = subprocess.run(
        [*KTS, "serve", "--config", str(config)], cwd=ROOT, env=kts_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert key in lines[0]
    assert "never-echo-this-secret" not in result.stderr


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [*KTS, "serve", "--config", str(tmp_path / "absent.properties")],
        cwd=ROOT,
        env=kts_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "absent.properties" in result.stderr


def test_refuses_a_behind_schema_without_auto_migration(tmp_path: Path) -> None:
    result = subprocess.run(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT="127.0.0.1:2181",
            KTS_DELEGATION_TOKEN_SECRET_KEY="s",
            KTS_AUDIT_DB_URL=f"sqlite:///{tmp_path / 'audit.db'}",
            KTS_AUDIT_DB_AUTO_MIGRATE="false",
            KTS_HTTP_LISTENERS=f"http://127.0.0.1:{free_port()}",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "upgrade head" in lines[0]


def test_unreachable_audit_database_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT="127.0.0.1:2181",
            KTS_DELEGATION_TOKEN_SECRET_KEY="s",
            KTS_AUDIT_DB_URL=f"postgresql://kts:hunter2@127.0.0.1:{free_port()}/audit",
            KTS_HTTP_LISTENERS=f"http://127.0.0.1:{free_port()}",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "audit.db.url" in result.stderr
    assert "hunter2" not in result.stderr


class SilentServer:
    """A TCP port that accepts connections and never says a word: counts who came (ZooKeeper's stand-in for "was
    it touched?", and a port that answers but not as ZooKeeper)."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def _serve_once(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = kts_env(
        KTS_DELEGATION_TOKEN_SECRET_KEY="never-echo-this-secret",
        KTS_AUDIT_DB_URL=f"sqlite:///{tmp_path / 'audit.db'}",
        **settings,
    )
    env.setdefault("KTS_HTTP_LISTENERS", f"http://127.0.0.1:{free_port()}")
    return subprocess.run([*KTS, "serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "never-echo-this-secret" not in result.stderr + result.stdout
    return lines[0]


def test_a_busy_port_is_one_line_and_exit_2_before_the_database_or_zookeeper(
    tmp_path: Path, silent_server: SilentServer
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = _serve_once(
            tmp_path,
            KTS_HTTP_LISTENERS=f"http://127.0.0.1:{port}",
            KTS_ZOOKEEPER_CONNECT=f"127.0.0.1:{silent_server.port}",
        )
    assert result.returncode == 2
    assert _one_line(result) == f"kts: cannot listen on 127.0.0.1:{port} (http.listeners): the port is already in use"
    assert result.stdout == ""
    assert not (tmp_path / "audit.db").exists(), "the audit database was created (migrated) before the bind check"
    assert silent_server.accepted == [], "kts connected to ZooKeeper before the bind check"


def test_a_busy_management_port_is_one_line_and_exit_2_before_the_database(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = _serve_once(
            tmp_path, KTS_HTTP_MANAGEMENT_LISTENERS=f"http://127.0.0.1:{port}", KTS_ZOOKEEPER_CONNECT="127.0.0.1:1"
        )
    assert result.returncode == 2
    assert _one_line(result) == (
        f"kts: cannot listen on 127.0.0.1:{port} (http.management.listeners): the port is already in use"
    )
    assert not (tmp_path / "audit.db").exists()


def test_an_address_of_another_host_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # 192.0.2.1 is a documentation address (RFC 5737): no host has it.
    result = _serve_once(tmp_path, KTS_HTTP_LISTENERS="http://192.0.2.1:8080", KTS_ZOOKEEPER_CONNECT="127.0.0.1:1")
    assert result.returncode == 2
    assert _one_line(result) == (
        "kts: cannot listen on 192.0.2.1:8080 (http.listeners): the address is not one of this host's"
    )


def test_an_unresolvable_zookeeper_name_is_named(tmp_path: Path) -> None:
    # .invalid never resolves (RFC 2606).
    result = _serve_once(
        tmp_path, KTS_ZOOKEEPER_CONNECT="zk.invalid:2181/kafka", KTS_ZOOKEEPER_CONNECTION_TIMEOUT_MS="1000"
    )
    assert result.returncode == 1
    assert _one_line(result) == (
        "kts: cannot connect to ZooKeeper at zk.invalid:2181: timed out after 1 s (zookeeper.connection.timeout.ms); "
        "zk.invalid:2181: name not resolved"
    )


def test_a_refused_zookeeper_connection_is_named_for_each_server(tmp_path: Path) -> None:
    refusing = free_port()
    result = _serve_once(
        tmp_path,
        KTS_ZOOKEEPER_CONNECT=f"127.0.0.1:{refusing},zk.invalid:2181",
        KTS_ZOOKEEPER_CONNECTION_TIMEOUT_MS="1500",
    )
    assert result.returncode == 1
    assert _one_line(result) == (
        f"kts: cannot connect to ZooKeeper at 127.0.0.1:{refusing},zk.invalid:2181: timed out after 1.5 s "
        f"(zookeeper.connection.timeout.ms); 127.0.0.1:{refusing}: connection refused (nothing listens on that "
        "port); zk.invalid:2181: name not resolved"
    )


def test_a_port_that_never_answers_as_zookeeper_times_out_after_the_connection_timeout(
    tmp_path: Path, silent_server: SilentServer
) -> None:
    result = _serve_once(
        tmp_path,
        KTS_ZOOKEEPER_CONNECT=f"127.0.0.1:{silent_server.port}",
        KTS_ZOOKEEPER_CONNECTION_TIMEOUT_MS="1000",
    )
    assert result.returncode == 1
    line = _one_line(result)
    assert line.startswith(
        f"kts: cannot connect to ZooKeeper at 127.0.0.1:{silent_server.port}: timed out after 1 s "
        f"(zookeeper.connection.timeout.ms); 127.0.0.1:{silent_server.port}: accepts TCP connections but no "
        "ZooKeeper session came of them"
    ), line
    assert silent_server.accepted, "the positive control: kts did reach the port"


def test_without_a_connection_timeout_kafkas_default_is_the_session_timeout(tmp_path: Path) -> None:
    result = _serve_once(
        tmp_path, KTS_ZOOKEEPER_CONNECT=f"127.0.0.1:{free_port()}", KTS_ZOOKEEPER_SESSION_TIMEOUT_MS="2000"
    )
    assert result.returncode == 1
    assert "timed out after 2 s (zookeeper.connection.timeout.ms)" in _one_line(result)


def test_a_chroot_where_no_kafka_cluster_lives_is_refused_in_one_line_naming_it(
    tmp_path: Path, zookeeper: EmbeddedZooKeeper, processes: list[subprocess.Popen[str]]
) -> None:
    """A mistyped chroot: no /cluster/id there. kts names the path it looked at and creates nothing there; the
    operator who runs kts before the first broker says so with zookeeper.cluster.required=false."""
    chroot = f"/kafak-{uuid.uuid4().hex[:8]}"
    connect = f"{zookeeper.connect_string}{chroot}"
    result = subprocess.run(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(KTS_ZOOKEEPER_CONNECT=connect, KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"kts: no Kafka cluster at {connect}: {chroot}/cluster/id does not exist")
    assert "zookeeper.cluster.required=false" in lines[0]
    raw = KazooClient(hosts=zookeeper.connect_string)
    raw.start(10)
    try:
        assert raw.exists(chroot) is None
    finally:
        raw.stop()
        raw.close()

    url = start_kts(
        processes,
        tmp_path,
        "before-the-first-broker",
        KTS_ZOOKEEPER_CONNECT=connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_ZOOKEEPER_CLUSTER_REQUIRED="false",
        KTS_SUPER_USERS="User:admin",
    )
    assert httpx.get(f"{url}/readyz").json() == {"status": "ready", "reason": "ok"}
    raw = KazooClient(hosts=connect)
    raw.start(10)
    try:
        put_user(raw, *ADMIN)  # an operator, to read the details /readyz no longer tells
    finally:
        raw.stop()
        raw.close()
    status = _eventually_ok(lambda: httpx.get(f"{url}/v1/cluster/status", headers=basic(ADMIN)))
    assert status["migration"]["clusterId"] is None


def _eventually_ok(get: Callable[[], httpx.Response], timeout_s: float = 60.0) -> dict[str, Any]:
    """The body of the first 200 ``get`` answers (a user written to ZooKeeper reaches kts a moment later)."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = get()
        if response.status_code == 200 or time.monotonic() > deadline:
            assert response.status_code == 200, response.text
            return dict(response.json())
        time.sleep(0.2)
