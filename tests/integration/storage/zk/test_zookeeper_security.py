"""ZooKeeper security on real servers: SASL DIGEST-MD5 logins (an ensemble that enforces them and one that
merely accepts them), znode ACLs as brokers set them with ``zookeeper.set.acl=true``, and TLS with a client
certificate on a ``secureClientPort``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError
from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, make_acl

from app.cli.server.embedded_zookeeper import NETTY_JARS, EmbeddedZooKeeper, free_port
from app.domain.acl import AccessControlEntry, Operation, PatternType, Permission, ResourcePattern
from app.domain.credentials import Mechanism
from app.domain.errors import StoreUnavailable
from app.domain.principal import KafkaPrincipal
from app.domain.scram import derive
from app.domain.token import TokenInformation
from app.service.ports import CreateTerms
from app.storage.zk.acl_store import ZkAclStore
from app.storage.zk.client_security import ZkClientSecurity, client_security
from app.storage.zk.connection import ZkConnection
from app.storage.zk.token_store import ZkTokenStore
from app.storage.zk.user_store import ZkUserStore
from app.storage.zk.znodes import (
    AclChangeZNode,
    AclZNode,
    ConfigChangeZNode,
    KtsZNodes,
    TokenChangeZNode,
    TokenZNode,
    UserConfigZNode,
)
from tests.api.helpers import eventually
from tests.conftest import ZK_SASL_USERS, SaslZooKeeper, start_sasl_zookeeper
from tests.tls_material import CertificateAuthority

TOKEN_ID = "SecureTokenAAAAAAAAAAA"
KTS_ALL = make_acl("sasl", "kts", all=True)
WORLD_READ = make_acl("world", "anyone", read=True)
CREATOR_ONLY = {KTS_ALL}
CREATOR_AND_WORLD_READ = {KTS_ALL, WORLD_READ}


def _token() -> TokenInformation:
    alice = KafkaPrincipal.user("alice")
    return TokenInformation(TOKEN_ID, alice, alice, (), 1000, 2000, 9000)


def _login(user: str = "kts", password: str | None = None, *, set_acl: bool = True) -> ZkClientSecurity:
    return client_security(set_acl=set_acl, sasl_username=user, sasl_password=password or ZK_SASL_USERS[user])


def _put_alice(zk: ZkConnection) -> None:
    ZkUserStore(zk).put_credential("alice", Mechanism.SCRAM_SHA_512, derive(Mechanism.SCRAM_SHA_512, "alice-pw", 4096))


def _acls(client: KazooClient, path: str) -> set[ACL]:
    return set(client.get_acls(path)[0])


def _only_child(client: KazooClient, parent: str) -> str:
    (child,) = client.get_children(parent)
    return f"{parent}/{child}"


@pytest.fixture
def secure_connect(sasl_zookeeper: SaslZooKeeper) -> str:
    return sasl_zookeeper.chroot_connect()


@pytest.fixture
def secure_zk(secure_connect: str) -> Iterator[ZkConnection]:
    connection = ZkConnection(secure_connect, session_timeout_ms=6000, security=_login())
    connection.start()
    yield connection
    connection.stop()


@pytest.fixture
def as_kts(sasl_zookeeper: SaslZooKeeper, secure_connect: str, secure_zk: ZkConnection) -> Iterator[KazooClient]:
    """A raw client logged in as kts's own identity, to inspect what kts wrote."""
    client = sasl_zookeeper.client("kts", connect=secure_connect)
    yield client
    client.stop()
    client.close()


def test_token_znodes_are_creator_only_and_notifications_world_readable(
    secure_zk: ZkConnection, as_kts: KazooClient, sasl_zookeeper: SaslZooKeeper, secure_connect: str
) -> None:
    ZkTokenStore(secure_zk).create(_token(), CreateTerms(7))

    assert _acls(as_kts, TokenZNode.path(TOKEN_ID)) == CREATOR_ONLY
    assert _acls(as_kts, TokenZNode.ROOT) == CREATOR_ONLY
    assert _acls(as_kts, _only_child(as_kts, TokenChangeZNode.ROOT)) == CREATOR_AND_WORLD_READ
    assert _acls(as_kts, TokenChangeZNode.ROOT) == CREATOR_AND_WORLD_READ
    assert _acls(as_kts, "/delegation_token") == CREATOR_AND_WORLD_READ
    assert _acls(as_kts, KtsZNodes.audit_intent(7)) == CREATOR_ONLY
    assert _acls(as_kts, KtsZNodes.ROOT) == CREATOR_ONLY
    root = sasl_zookeeper.client("kts")
    try:
        assert _acls(root, "/" + secure_connect.partition("/")[2]) == CREATOR_AND_WORLD_READ  # the chroot
    finally:
        root.stop()
        root.close()


def test_credentials_are_creator_only_and_kafka_acls_world_readable(
    secure_zk: ZkConnection, as_kts: KazooClient
) -> None:
    _put_alice(secure_zk)
    pattern = ResourcePattern("User", "User:alice", PatternType.LITERAL)
    entry = AccessControlEntry("User:bob", "*", Operation.CREATE_TOKENS, Permission.ALLOW)
    ZkAclStore(secure_zk).change(pattern, lambda entries: entries | {entry})

    assert _acls(as_kts, UserConfigZNode.path("alice")) == CREATOR_ONLY
    assert _acls(as_kts, _only_child(as_kts, ConfigChangeZNode.ROOT)) == CREATOR_AND_WORLD_READ
    assert _acls(as_kts, AclZNode.path(pattern)) == CREATOR_AND_WORLD_READ
    assert _acls(as_kts, _only_child(as_kts, AclChangeZNode.LITERAL_ROOT)) == CREATOR_AND_WORLD_READ


def test_recipe_znodes_such_as_the_sweeper_election_are_creator_only(
    secure_zk: ZkConnection, as_kts: KazooClient
) -> None:
    lock = secure_zk.client.Lock(KtsZNodes.SWEEPER_ELECTION, "replica-1")
    assert lock.acquire(timeout=10)
    try:
        assert _acls(as_kts, KtsZNodes.SWEEPER_ELECTION) == CREATOR_ONLY
        assert _acls(as_kts, _only_child(as_kts, KtsZNodes.SWEEPER_ELECTION)) == CREATOR_ONLY
    finally:
        lock.release()


def test_another_identity_reads_notifications_but_not_tokens_or_credentials(
    secure_zk: ZkConnection, sasl_zookeeper: SaslZooKeeper, secure_connect: str
) -> None:
    ZkTokenStore(secure_zk).create(_token())
    _put_alice(secure_zk)
    other = sasl_zookeeper.client("other", connect=secure_connect)
    try:
        with pytest.raises(NoAuthError):
            other.get(TokenZNode.path(TOKEN_ID))
        with pytest.raises(NoAuthError):
            other.get_children(TokenZNode.ROOT)
        with pytest.raises(NoAuthError):
            other.get(UserConfigZNode.path("alice"))
        notification = _only_child(other, TokenChangeZNode.ROOT)
        assert other.get(notification)[0] == TOKEN_ID.encode()
        with pytest.raises(NoAuthError):  # the world only reads
            other.delete(notification)
    finally:
        other.stop()
        other.close()


def test_an_anonymous_client_cannot_read_a_token_znode(sasl_optional_zookeeper: SaslZooKeeper) -> None:
    connect = sasl_optional_zookeeper.chroot_connect()
    connection = ZkConnection(connect, session_timeout_ms=6000, security=_login())
    connection.start()
    anonymous = sasl_optional_zookeeper.client(None, connect=connect)
    try:
        ZkTokenStore(connection).create(_token())
        with pytest.raises(NoAuthError):
            anonymous.get(TokenZNode.path(TOKEN_ID))
        assert anonymous.get(_only_child(anonymous, TokenChangeZNode.ROOT))[0] == TOKEN_ID.encode()
    finally:
        anonymous.stop()
        anonymous.close()
        connection.stop()


def test_the_enforcing_ensemble_refuses_anonymous_clients_outright(
    sasl_zookeeper: SaslZooKeeper, secure_zk: ZkConnection
) -> None:
    anonymous = KazooClient(hosts=sasl_zookeeper.server.connect_string)
    anonymous.start(10)
    try:
        with pytest.raises(SessionClosedRequireSaslError):
            anonymous.get_children("/")
    finally:
        anonymous.stop()
        anonymous.close()


@pytest.mark.parametrize("enforced", [True, False], ids=["enforcing", "optional"])
@pytest.mark.parametrize(("user", "password"), [("kts", "not-the-password"), ("nobody", "nobody-password")])
def test_a_rejected_login_is_one_clear_error_without_the_password(
    request: pytest.FixtureRequest, enforced: bool, user: str, password: str
) -> None:
    zookeeper: SaslZooKeeper = request.getfixturevalue("sasl_zookeeper" if enforced else "sasl_optional_zookeeper")
    connection = ZkConnection(
        zookeeper.chroot_connect(), session_timeout_ms=6000, security=_login(user, password, set_acl=True)
    )
    with pytest.raises(StoreUnavailable) as refused:
        connection.start()
    message = refused.value.message
    assert f"rejected the login of SASL user '{user}'" in message
    assert "zookeeper.sasl.password" in message
    assert password not in message and "\n" not in message


def test_the_login_is_repeated_when_the_session_reconnects(tmp_path: Path) -> None:
    zookeeper = start_sasl_zookeeper(tmp_path, enforced=True)
    connection = ZkConnection(zookeeper.chroot_connect(), session_timeout_ms=20_000, security=_login())
    try:
        connection.start()
        zookeeper.server.stop()
        zookeeper.server.start()  # same port and data: kazoo reconnects the same session
        eventually(lambda: connection.connected, timeout_s=30)
        ZkTokenStore(connection).create(_token())
        assert connection.client.get_acls(TokenZNode.path(TOKEN_ID))[0] == [KTS_ALL]
    finally:
        connection.stop()
        zookeeper.server.stop()


def test_kts_without_a_login_is_told_the_ensemble_requires_one(sasl_zookeeper: SaslZooKeeper) -> None:
    connection = ZkConnection(sasl_zookeeper.chroot_connect(), session_timeout_ms=6000)
    with pytest.raises(StoreUnavailable, match="requires a SASL login"):
        connection.start()


def test_a_chroot_owned_by_another_identity_is_a_clear_error(sasl_zookeeper: SaslZooKeeper) -> None:
    connect = sasl_zookeeper.chroot_connect()
    other = sasl_zookeeper.client("other")
    try:
        other.create("/" + connect.partition("/")[2], b"", acl=CREATOR_ALL_ACL)
    finally:
        other.stop()
        other.close()
    connection = ZkConnection(connect, session_timeout_ms=6000, security=_login())
    with pytest.raises(StoreUnavailable, match="refused SASL user 'kts' access"):
        connection.start()


@pytest.mark.parametrize("login", [False, True], ids=["anonymous", "sasl"])
def test_without_set_acl_every_znode_stays_open_to_the_world(
    request: pytest.FixtureRequest, login: bool, sasl_optional_zookeeper: SaslZooKeeper
) -> None:
    if login:
        connect = sasl_optional_zookeeper.chroot_connect()
        security = _login(set_acl=False)
    else:
        connect = request.getfixturevalue("zk_connect")
        security = ZkClientSecurity()
    connection = ZkConnection(connect, session_timeout_ms=6000, security=security)
    connection.start()
    try:
        ZkTokenStore(connection).create(_token(), CreateTerms(1))
        client = connection.client
        for path in (
            TokenZNode.path(TOKEN_ID),
            TokenZNode.ROOT,
            _only_child(client, TokenChangeZNode.ROOT),
            KtsZNodes.audit_intent(1),
        ):
            assert client.get_acls(path)[0] == OPEN_ACL_UNSAFE, path
    finally:
        connection.stop()


# TLS: ZooKeeper's Netty server on a secureClientPort asks for a client certificate; its x509 provider makes
# the certificate's subject the session's identity, so creator-only znodes name it.


class TlsZooKeeper:
    def __init__(self, directory: Path) -> None:
        self.ca = CertificateAuthority(directory)
        server = self.ca.issue("zookeeper", server=True, CN="localhost")
        self.client = self.ca.issue("kts-client", CN="kts")
        keystore = directory / "zookeeper-keystore.pem"  # ZooKeeper reads a PEM key and certificate in one file
        keystore.write_bytes(server.key.read_bytes() + server.cert.read_bytes())
        self.secure_port = free_port()
        self.server = EmbeddedZooKeeper(
            directory,
            extra_config=(
                f"secureClientPort={self.secure_port}",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                f"ssl.keyStore.location={keystore}",
                "ssl.keyStore.type=PEM",
                f"ssl.trustStore.location={self.ca.path}",
                "ssl.trustStore.type=PEM",
                "ssl.clientAuth=need",
                "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
            ),
            extra_jars=NETTY_JARS,
        )

    def connect(self, chroot: str) -> str:
        return f"127.0.0.1:{self.secure_port}/{chroot}"


@pytest.fixture(scope="module")
def tls_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsZooKeeper]:
    zookeeper = TlsZooKeeper(tmp_path_factory.mktemp("zookeeper-tls"))
    zookeeper.server.start()
    yield zookeeper
    zookeeper.server.stop()


def test_tls_with_a_client_certificate_makes_token_znodes_creator_only(tls_zookeeper: TlsZooKeeper) -> None:
    security = client_security(
        set_acl=True,
        ssl_client_enable=True,
        ssl_cafile=tls_zookeeper.ca.path,
        ssl_certfile=tls_zookeeper.client.cert,
        ssl_keyfile=tls_zookeeper.client.key,
    )
    connection = ZkConnection(tls_zookeeper.connect("kts-tls"), session_timeout_ms=6000, security=security)
    connection.start()
    try:
        ZkTokenStore(connection).create(_token())
        client = connection.client
        assert client.get_acls(TokenZNode.path(TOKEN_ID))[0] == [make_acl("x509", "CN=kts", all=True)]
        assert set(client.get_acls(_only_child(client, TokenChangeZNode.ROOT))[0]) == {
            make_acl("x509", "CN=kts", all=True),
            WORLD_READ,
        }
    finally:
        connection.stop()


def test_tls_refuses_a_server_that_the_configured_ca_did_not_sign(tls_zookeeper: TlsZooKeeper, tmp_path: Path) -> None:
    stranger = CertificateAuthority(tmp_path, name="another CA")
    security = client_security(
        ssl_client_enable=True,
        ssl_cafile=stranger.path,
        ssl_certfile=tls_zookeeper.client.cert,
        ssl_keyfile=tls_zookeeper.client.key,
    )
    connection = ZkConnection(tls_zookeeper.connect("kts-tls-stranger"), session_timeout_ms=6000, security=security)
    with pytest.raises(StoreUnavailable, match="cannot connect to ZooKeeper"):
        connection.start(timeout_s=5)
