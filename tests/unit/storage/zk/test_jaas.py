"""Reading the ZooKeeper ``Client`` login from a broker's JAAS file."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.storage.zk.jaas import DIGEST_LOGIN_MODULE, JaasError, parse, read_digest_login

BROKER_JAAS = """
/* A broker's file: its listener login, then ZooKeeper's. */
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret"
    user_admin="admin-secret";
};

// ZooKeeper client login
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="zk \\"quoted\\" secret";
};
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(text, encoding="utf-8")
    return path


def test_parses_sections_modules_flags_and_options() -> None:
    sections = parse(BROKER_JAAS)
    assert set(sections) == {"KafkaServer", "Client"}
    (client,) = sections["Client"]
    assert client.class_name == DIGEST_LOGIN_MODULE
    assert client.flag == "required"
    assert client.options == {"username": "kafka", "password": 'zk "quoted" secret'}
    assert "secret" not in repr(client)


def test_reads_the_client_login(tmp_path: Path) -> None:
    assert read_digest_login(_file(tmp_path, BROKER_JAAS)) == ("kafka", 'zk "quoted" secret')


def test_reads_another_section_when_asked(tmp_path: Path) -> None:
    text = BROKER_JAAS.replace("Client {", "ZkClient {")
    assert read_digest_login(_file(tmp_path, text), "ZkClient")[0] == "kafka"
    with pytest.raises(JaasError, match="has no 'Client' section"):
        read_digest_login(_file(tmp_path, text))


def test_refuses_kerberos_with_a_clear_message(tmp_path: Path) -> None:
    text = 'Client {\n  com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal="k@R";\n};\n'
    with pytest.raises(JaasError, match=r"uses Krb5LoginModule; kts authenticates to ZooKeeper with .*DIGEST-MD5"):
        read_digest_login(_file(tmp_path, text))


def test_needs_username_and_password(tmp_path: Path) -> None:
    text = f'Client {{ {DIGEST_LOGIN_MODULE} required username="kafka"; }};'
    with pytest.raises(JaasError, match="needs username and password"):
        read_digest_login(_file(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('Client { x required password="hunter2"', "unexpected end of file"),
        ('Client { x required password="hunter2 ; };', "line 1: unterminated"),
        ('Client { x mandatory password="hunter2"; };', "line 1: expected a control flag"),
        ('Client {\n x required password "hunter2"; };', "line 2: expected '='"),
    ],
)
def test_syntax_errors_name_the_line_never_the_values(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(JaasError) as error:
        read_digest_login(_file(tmp_path, text))
    assert message in str(error.value)
    assert "hunter2" not in str(error.value)


def test_an_unreadable_file_is_a_jaas_error(tmp_path: Path) -> None:
    with pytest.raises(JaasError, match="cannot read"):
        read_digest_login(tmp_path / "absent.conf")
