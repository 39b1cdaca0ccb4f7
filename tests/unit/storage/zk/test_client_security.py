"""ZooKeeper client security from settings: which combinations are accepted, kazoo's options, znode ACLs."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from app.backends import load_settings
from app.domain.jaas import DIGEST_LOGIN_MODULE
from app.settings import ConfigError
from app.storage.zk.client_security import client_security
from app.storage.zk.settings import ZooKeeperSettings
from app.storage.zk.znodes.znode_acls import ZnodeAcls, is_sensitive

PASSWORD = "zk-Pa55word"
REQUIRED = {"zookeeper_connect": "127.0.0.1:2181/kafka", "delegation_token_secret_key": "s"}


@pytest.mark.parametrize(
    ("path", "sensitive"),
    [
        ("/delegation_token/tokens", True),
        ("/delegation_token/tokens/E8gTWaIxRUOaSRH7wY3N1w", True),
        ("/delegation_token", False),
        ("/delegation_token/token_changes/token_change_", False),
        ("/config/users/alice", True),
        ("/config/brokers/1", True),
        ("/config/changes/config_change_", False),
        ("/kafka-acl/User/User:alice", False),
        ("/kafka-acl-changes/acl_changes_", False),
        ("/kts", True),
        ("/kts/audit-intents/7", True),
        ("/kts-prod", False),  # a chroot that merely starts like /kts
    ],
)
def test_sensitive_paths_are_kafkas_and_ktss_own(path: str, sensitive: bool) -> None:
    assert is_sensitive(path) is sensitive


def test_acls_as_brokers_set_them() -> None:
    secure = ZnodeAcls(secure=True)
    assert secure.for_path("/delegation_token/tokens/x") == CREATOR_ALL_ACL
    assert secure.for_path("/delegation_token/token_changes/token_change_") == CREATOR_ALL_ACL + READ_ACL_UNSAFE
    assert secure.default == CREATOR_ALL_ACL
    open_ = ZnodeAcls(secure=False)
    assert open_.for_path("/delegation_token/tokens/x") == OPEN_ACL_UNSAFE
    assert open_.default == OPEN_ACL_UNSAFE


def test_sasl_login_becomes_kazoos_digest_md5_options_and_never_shows_the_password() -> None:
    security = client_security(set_acl=True, sasl_username="kafka", sasl_password=PASSWORD)
    options = security.kazoo_options()
    assert options["sasl_options"] == {"mechanism": "DIGEST-MD5", "username": "kafka", "password": PASSWORD}
    assert options["default_acl"] == CREATOR_ALL_ACL
    assert "use_ssl" not in options
    assert security.identity == "SASL user 'kafka'"
    assert PASSWORD not in repr(security)
    assert security.kazoo_options()["sasl_options"] is not options["sasl_options"]  # kazoo writes into it


def test_tls_becomes_kazoos_ssl_options(tmp_path: Path) -> None:
    ca, cert, key = (tmp_path / name for name in ("ca.pem", "kts.crt", "kts.key"))
    for path in (ca, cert, key):
        path.write_text("-----PEM-----\n")
    security = client_security(
        ssl_client_enable=True, ssl_cafile=ca, ssl_certfile=cert, ssl_keyfile=key, ssl_keyfile_password=PASSWORD
    )
    options = security.kazoo_options()
    assert options | {"keyfile_password": None} == {
        "default_acl": OPEN_ACL_UNSAFE,
        "use_ssl": True,
        "verify_certs": True,
        "check_hostname": True,
        "ca": str(ca),
        "certfile": str(cert),
        "keyfile": str(key),
        "keyfile_password": None,
    }
    assert options["keyfile_password"] == PASSWORD
    assert PASSWORD not in repr(security)
    assert security.identity == f"the TLS client certificate {cert}"
    unchecked = client_security(ssl_client_enable=True, ssl_endpoint_identification_algorithm="")
    assert unchecked.kazoo_options()["check_hostname"] is False


BROKER_JAAS = f"""
KafkaServer {{
    org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";
}};
Client {{
    {DIGEST_LOGIN_MODULE} required
    username="kafka"
    password="zk \\"quoted\\" {PASSWORD}";
}};
"""


def _jaas_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(text, encoding="utf-8")
    return path


def test_jaas_file_gives_the_login_of_its_client_section(tmp_path: Path) -> None:
    security = client_security(set_acl=True, jaas_file=_jaas_file(tmp_path, BROKER_JAAS))
    assert security.login is not None
    assert (security.login.username, security.login.password) == ("kafka", f'zk "quoted" {PASSWORD}')
    assert security.identity == "SASL user 'kafka'"


def test_jaas_file_gives_another_section_when_asked(tmp_path: Path) -> None:
    jaas = _jaas_file(tmp_path, BROKER_JAAS.replace("Client {", "ZkClient {"))
    login = client_security(jaas_file=jaas, jaas_section="ZkClient").login
    assert login is not None and login.username == "kafka"
    with pytest.raises(ValueError, match="has no 'Client' section"):
        client_security(jaas_file=jaas)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'Client {\n  com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal="k@R";\n};\n',
            r"uses Krb5LoginModule; kts authenticates to ZooKeeper with .*DIGEST-MD5",
        ),
        (f'Client {{ {DIGEST_LOGIN_MODULE} required username="kafka"; }};', "needs username and password"),
        (f'Client {{\n {DIGEST_LOGIN_MODULE} required password "{PASSWORD}"; }};', "line 2: expected '='"),
    ],
)
def test_unusable_jaas_files_are_one_line_without_the_password(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as error:
        client_security(jaas_file=_jaas_file(tmp_path, text))
    assert str(error.value).startswith("zookeeper.jaas.file: ")
    assert PASSWORD not in str(error.value) and "\n" not in str(error.value)


def test_an_unreadable_jaas_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"zookeeper\.jaas\.file: cannot read .*absent\.conf"):
        client_security(jaas_file=tmp_path / "absent.conf")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"zookeeper_set_acl": "true"}, "zookeeper.set.acl: true needs an identity for ZooKeeper"),
        ({"zookeeper_sasl_username": "kafka"}, "zookeeper.sasl.password: missing"),
        ({"zookeeper_sasl_password": PASSWORD}, "zookeeper.sasl.username: missing"),
        ({"zookeeper_sasl_username": " ", "zookeeper_sasl_password": PASSWORD}, "must not be empty"),
        ({"zookeeper_jaas_file": "/nonexistent/jaas.conf"}, "zookeeper.jaas.file: cannot read"),
        ({"zookeeper_ssl_cafile": "/nonexistent/ca.pem"}, "zookeeper.ssl.cafile: set, but zookeeper.ssl.client"),
        (
            {"zookeeper_ssl_client_enable": "true", "zookeeper_ssl_cafile": "/nonexistent/ca.pem"},
            "zookeeper.ssl.cafile: /nonexistent/ca.pem is not a readable file",
        ),
        (
            {"zookeeper_ssl_client_enable": "true", "zookeeper_ssl_endpoint_identification_algorithm": "LDAPS"},
            "must be HTTPS or empty",
        ),
    ],
)
def test_bad_combinations_are_one_line_naming_the_key(
    monkeypatch: pytest.MonkeyPatch, values: dict[str, str], message: str
) -> None:
    for name, value in {**REQUIRED, **values}.items():
        monkeypatch.setenv(f"KTS_{name.upper()}", value)
    with pytest.raises(ConfigError) as error:
        load_settings()
    assert message in str(error.value)
    assert "\n" not in str(error.value) and PASSWORD not in str(error.value)


def test_both_jaas_file_and_keys_is_refused(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text("Client { x required; };")
    with pytest.raises(ConfigError, match=r"give either the JAAS file or zookeeper\.sasl\.username"):
        load_settings(**REQUIRED, zookeeper_jaas_file=jaas, zookeeper_sasl_username="k", zookeeper_sasl_password="p")


def test_settings_from_a_properties_file_hide_the_password(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(
        "zookeeper.connect=127.0.0.1:2181/kafka\ndelegation.token.secret.key=s\nzookeeper.set.acl=true\n"
        f"zookeeper.sasl.username=kafka\nzookeeper.sasl.password={PASSWORD}\n"
    )
    settings = load_settings(properties)
    assert settings.group(ZooKeeperSettings).security.set_acl
    assert settings.group(ZooKeeperSettings).security.identity == "SASL user 'kafka'"
    assert PASSWORD not in repr(settings) and PASSWORD not in str(settings.model_dump())
