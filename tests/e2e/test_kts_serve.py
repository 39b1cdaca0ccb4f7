"""``kts serve`` as a process: a properties file with broker key names, env overrides, refusal to start."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from app.cli.server.embedded_zookeeper import EmbeddedZooKeeper, free_port
from tests.api.conftest import ALICE, basic, put_user
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
    from app.cli.server.embedded_zookeeper import free_port

    result = subprocess.run(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_ZOOKEEPER_CONNECT="127.0.0.1:2181",
            KTS_DELEGATION_TOKEN_SECRET_KEY="s",
            KTS_AUDIT_DB_URL=f"postgresql://kts:hunter2@127.0.0.1:{free_port()}/audit",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "audit.db.url" in result.stderr
    assert "hunter2" not in result.stderr


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
    )
    assert httpx.get(f"{url}/readyz").json()["migration"]["clusterId"] is None
