"""``--command-config``: the properties forms a user or a Kafka client config file may hold, and ``--server``."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from app.cli.client.arguments import DEFAULT_SERVER
from app.cli.client.command_config import (
    CommandConfig,
    TokenCredential,
    UserPassword,
    load_command_config,
    parse_command_config,
    parse_sasl_jaas_config,
    server_url,
)
from app.settings import ConfigError
from tests.tls_material import CertificateAuthority

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
HMAC = base64.b64encode(bytes(range(64))).decode()


def test_username_and_password_are_basic() -> None:
    config = parse_command_config({"username": "alice", "password": "alice-pw", "bootstrap.servers": "b:9092"})
    assert config.credential == UserPassword("alice", "alice-pw")
    assert config.authorization == ("Basic", base64.b64encode(b"alice:alice-pw").decode())
    assert config.user_principal == "User:alice"


def test_token_id_and_hmac_are_bearer() -> None:
    config = parse_command_config({"token.id": "E8gTWaIxRUOaSRH7wY3N1w", "token.hmac": HMAC})
    assert config.authorization == ("Bearer", f"E8gTWaIxRUOaSRH7wY3N1w:{HMAC}")
    assert config.user_principal is None


def test_no_credentials_at_all() -> None:
    config = parse_command_config({"security.protocol": "SASL_SSL"})
    assert config == CommandConfig()
    assert config.authorization is None
    assert config.ssl_context() is None


@pytest.mark.parametrize(
    ("jaas", "expected"),
    [
        (f'{SCRAM} required username="alice" password="alice-pw";', UserPassword("alice", "alice-pw")),
        (
            f'{SCRAM} required username="alice" password="alice-pw" tokenauth="false";',
            UserPassword("alice", "alice-pw"),
        ),
        (f'{SCRAM} required username="tok" password="{HMAC}" tokenauth="true";', TokenCredential("tok", HMAC)),
        (f'{SCRAM} required username="tok" password="{HMAC}" tokenauth=TRUE;', TokenCredential("tok", HMAC)),
        (
            'org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="bob-pw";',
            UserPassword("bob", "bob-pw"),
        ),
    ],
)
def test_kafka_sasl_jaas_config_forms(jaas: str, expected: object) -> None:
    assert parse_sasl_jaas_config(jaas) == expected
    assert parse_command_config({"sasl.jaas.config": jaas, "sasl.mechanism": "SCRAM-SHA-512"}).credential == expected


def test_a_kafka_client_file_works_as_it_is(tmp_path: Path) -> None:
    """Continuation lines and escapes, as Kafka's Utils.loadProps reads them."""
    path = tmp_path / "client.properties"
    path.write_text(
        "bootstrap.servers=broker:9093\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={SCRAM} required \\\n"
        '    username="E8gTWaIxRUOaSRH7wY3N1w" \\\n'
        f'    password="{HMAC}" \\\n'
        '    tokenauth="true";\n',
        encoding="utf-8",
    )
    config = load_command_config(path)
    assert config.credential == TokenCredential("E8gTWaIxRUOaSRH7wY3N1w", HMAC)


@pytest.mark.parametrize(
    ("jaas", "complaint"),
    [
        ('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true principal="k@R";', "Krb5LoginModule"),
        (f'{SCRAM} required username="alice";', "username and password"),
        # the syntax errors of tests/unit/domain/test_jaas.py, as one line that names the key
        (f'{SCRAM} required username="a" password="never-echo-me;', "unterminated"),
        (f'{SCRAM} required username="a" password="never-echo-me"; {SCRAM} required username="b" password="c";', "one"),
    ],
)
def test_bad_sasl_jaas_config_is_one_clear_line(jaas: str, complaint: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_command_config({"sasl.jaas.config": jaas})
    message = str(excinfo.value)
    assert message.startswith("sasl.jaas.config")
    assert complaint in message
    assert "never-echo-me" not in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"username": "alice"}, "username and password"),
        ({"password": "never-echo-me"}, "username and password"),
        ({"token.id": "abc"}, "token.id and token.hmac"),
        ({"username": "a", "password": "never-echo-me", "token.id": "t", "token.hmac": HMAC}, "not username/password"),
        (
            {
                "username": "a",
                "password": "never-echo-me",
                "sasl.jaas.config": f'{SCRAM} required username="a" password="b";',
            },
            "sasl.jaas.config",
        ),
        ({"ssl.cafile": "/nonexistent/ca.pem"}, "ssl.cafile"),
    ],
)
def test_ambiguous_or_incomplete_configs_are_refused(values: dict[str, str], complaint: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_command_config(values)
    assert complaint in str(excinfo.value)
    assert "never-echo-me" not in str(excinfo.value)


def test_a_key_file_needs_a_certificate(tmp_path: Path) -> None:
    key = tmp_path / "client.key"
    key.write_text("x")
    with pytest.raises(ConfigError, match=r"ssl\.keyfile"):
        parse_command_config({"ssl.keyfile": str(key)})


def test_tls_files_make_a_context_with_the_client_certificate(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path)
    client = ca.issue("client", CN="svc-sidecar")
    config = parse_command_config(
        {"ssl.certfile": str(client.cert), "ssl.keyfile": str(client.key), "ssl.cafile": str(ca.path)}
    )
    assert config.authorization is None
    context = config.ssl_context()
    assert context is not None
    assert context.get_ca_certs()[0]["subject"] == ((("commonName", "kts test CA"),),)


def test_unloadable_tls_files_are_a_config_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate")
    with pytest.raises(ConfigError, match=r"ssl\.certfile"):
        parse_command_config({"ssl.certfile": str(bogus)}).ssl_context()
    with pytest.raises(ConfigError, match=r"ssl\.cafile"):
        parse_command_config({"ssl.cafile": str(bogus)}).ssl_context()


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"absent\.properties"):
        load_command_config(tmp_path / "absent.properties")
    assert load_command_config(None) == CommandConfig()


def test_secrets_stay_out_of_reprs() -> None:
    config = parse_command_config({"username": "alice", "password": "never-echo-me"})
    assert "never-echo-me" not in repr(config)
    assert HMAC not in repr(TokenCredential("t", HMAC))


def test_server_comes_from_the_option_then_the_environment_then_the_default() -> None:
    assert server_url("https://kts.example.com:8443/", {"KTS_SERVER": "http://192.0.2.1:8080"}) == (
        "https://kts.example.com:8443"
    )
    assert server_url(None, {"KTS_SERVER": "http://192.0.2.1:8080"}) == "http://192.0.2.1:8080"
    assert server_url(None, {}) == DEFAULT_SERVER


@pytest.mark.parametrize("bad", ["127.0.0.1:8080", "ftp://example.com", "http://", "http://example.com:99999"])
def test_bad_server_urls_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="--server"):
        server_url(bad, {})
    with pytest.raises(ConfigError, match="KTS_SERVER"):
        server_url(None, {"KTS_SERVER": bad})


def test_the_command_config_comes_from_the_environment_when_not_given(tmp_path: Path) -> None:
    from app.cli.client.connection import command_config_path

    given = tmp_path / "given.properties"
    assert command_config_path(given, {"KTS_COMMAND_CONFIG": "/elsewhere"}) == given
    assert command_config_path(None, {"KTS_COMMAND_CONFIG": str(tmp_path / "env.properties")}) == (
        tmp_path / "env.properties"
    )
    assert command_config_path(None, {"KTS_COMMAND_CONFIG": " "}) is None
    assert command_config_path(None, {}) is None


def test_no_credentials_says_how_to_give_them() -> None:
    import argparse

    from app.cli.client.connection import open_client
    from app.cli.client.http_client import MissingCredentials

    args = argparse.Namespace(server="http://127.0.0.1:9", command_config=None)
    with pytest.raises(MissingCredentials) as excinfo:
        open_client(args)
    assert "--command-config" in str(excinfo.value) and "KTS_COMMAND_CONFIG" in str(excinfo.value)
    assert "username=" in str(excinfo.value)
