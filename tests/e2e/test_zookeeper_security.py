"""``kts serve`` against a ZooKeeper that enforces SASL DIGEST-MD5 logins, with ``zookeeper.set.acl=true``:
it logs in as the brokers do (their JAAS file, or kts's username/password keys), writes token znodes only
its identity can read, and refuses to start with one clear line when the login is wrong."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl

from app.cli.server.embedded_zookeeper import free_port
from app.domain.credentials import Mechanism
from app.domain.scram import derive
from app.storage.zk.client_security import client_security
from app.storage.zk.connection import ZkConnection
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import KtsZNodes, TokenChangeZNode, TokenZNode
from tests.api.conftest import ALICE, basic
from tests.conftest import SECRET, ZK_SASL_USERS, SaslZooKeeper
from tests.e2e.conftest import KTS, ROOT, kts_env, start_kts

KTS_ALL = make_acl("sasl", "kts", all=True)
WORLD_READ = make_acl("world", "anyone", read=True)


def _brokers_jaas_file(path: Path) -> Path:
    """A broker's JAAS file: its Kafka listener login, and the ZooKeeper ``Client`` login kts reuses."""
    path.write_text(
        "// as passed to brokers with -Djava.security.auth.login.config\n"
        "KafkaServer {\n"
        '    org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b";\n'
        "};\n"
        "Client {\n"
        "    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        '    username="kts"\n'
        f'    password="{ZK_SASL_USERS["kts"]}";\n'
        "};\n",
        encoding="utf-8",
    )
    return path


def _put_alice(connect: str) -> None:
    """Alice's SCRAM credential, written through a secured session as kafka-configs.sh would, in a chroot holding
    the /cluster/id a broker writes."""
    security = client_security(set_acl=True, sasl_username="kts", sasl_password=ZK_SASL_USERS["kts"])
    zk = ZkConnection(connect, session_timeout_ms=6000, security=security)
    zk.start()
    try:
        zk.client.create("/cluster/id", b'{"version":"1","id":"secured-cluster"}', makepath=True)
        ZkUserStore(zk).put_credential(
            ALICE[0], Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, ALICE[1], 4096)
        )
    finally:
        zk.stop()


@pytest.mark.parametrize("login", ["jaas-file", "username-password"])
def test_serves_tokens_that_only_its_zookeeper_identity_can_read(
    login: str, tmp_path: Path, sasl_zookeeper: SaslZooKeeper, processes: list[subprocess.Popen[str]]
) -> None:
    connect = sasl_zookeeper.chroot_connect()
    _put_alice(connect)
    if login == "jaas-file":
        credentials = {"KTS_ZOOKEEPER_JAAS_FILE": str(_brokers_jaas_file(tmp_path / "kafka_server_jaas.conf"))}
    else:
        credentials = {"KTS_ZOOKEEPER_SASL_USERNAME": "kts", "KTS_ZOOKEEPER_SASL_PASSWORD": ZK_SASL_USERS["kts"]}
    url = start_kts(
        processes,
        tmp_path,
        "secure",
        KTS_ZOOKEEPER_CONNECT=connect,
        KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
        KTS_ZOOKEEPER_SET_ACL="true",
        **credentials,
    )

    response = httpx.post(f"{url}/v1/tokens", json={}, headers=basic(ALICE))
    assert response.status_code == 201
    token_id = response.json()["tokenId"]
    assert httpx.get(f"{url}/v1/tokens/{token_id}", headers=basic(ALICE)).status_code == 200

    as_kts = sasl_zookeeper.client("kts", connect=connect)
    other = sasl_zookeeper.client("other", connect=connect)
    try:
        assert as_kts.get_acls(TokenZNode.path(token_id))[0] == [KTS_ALL]
        assert as_kts.get_acls(f"{KtsZNodes.OWNER_QUOTAS}/User%3Aalice")[0] == [KTS_ALL]  # the quota guard
        assert as_kts.get_acls(f"{KtsZNodes.TOKEN_SHARES}/User%3Aalice")[0] == [KTS_ALL]  # the share ledger
        (notification,) = as_kts.get_children(TokenChangeZNode.ROOT)
        assert set(as_kts.get_acls(f"{TokenChangeZNode.ROOT}/{notification}")[0]) == {KTS_ALL, WORLD_READ}
        with pytest.raises(NoAuthError):
            other.get(TokenZNode.path(token_id))
        assert other.get(f"{TokenChangeZNode.ROOT}/{notification}")[0] == token_id.encode()
    finally:
        for client in (as_kts, other):
            client.stop()
            client.close()
    processes[-1].terminate()
    processes[-1].wait(15)
    assert ZK_SASL_USERS["kts"] not in (tmp_path / "secure.log").read_text()


def _serve(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KTS, "serve"],
        cwd=ROOT,
        env=kts_env(
            KTS_DELEGATION_TOKEN_SECRET_KEY=SECRET,
            KTS_AUDIT_DB_URL=f"sqlite:///{tmp_path / 'a.db'}",
            KTS_HTTP_LISTENERS=f"http://127.0.0.1:{free_port()}",  # checked first: 8080 may be taken here
            **settings,
        ),
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.mark.parametrize("user", ["kts", "nobody"])
def test_a_rejected_zookeeper_login_exits_1_with_one_line(
    user: str, tmp_path: Path, sasl_zookeeper: SaslZooKeeper
) -> None:
    result = _serve(
        tmp_path,
        KTS_ZOOKEEPER_CONNECT=sasl_zookeeper.chroot_connect(),
        KTS_ZOOKEEPER_SET_ACL="true",
        KTS_ZOOKEEPER_SASL_USERNAME=user,
        KTS_ZOOKEEPER_SASL_PASSWORD="wrong-zk-password",
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"rejected the login of SASL user '{user}'" in lines[0]
    assert "wrong-zk-password" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr + result.stdout


def test_set_acl_without_a_zookeeper_identity_is_a_configuration_error(tmp_path: Path) -> None:
    result = _serve(tmp_path, KTS_ZOOKEEPER_CONNECT="127.0.0.1:2181", KTS_ZOOKEEPER_SET_ACL="true")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "zookeeper.set.acl" in lines[0]
