"""JAAS text: a broker's configuration file, a Kafka client's ``sasl.jaas.config`` entry, and rendering one."""

from __future__ import annotations

import pytest

from app.domain.jaas import (
    DIGEST_LOGIN_MODULE,
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasSyntaxError,
    LoginModule,
    parse_config,
    parse_login_module,
    render_login_module,
    render_section,
)

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
HMAC = "4yNy7/Z+zNgC0bevraCN9fOXatvHfn4ZrHtPzPlrbPxMD2i6+BNIueia0juqmA75Nxpj18hRCE7nMYHojrij4Q=="


def test_a_file_gives_its_sections_modules_flags_and_options() -> None:
    sections = parse_config(BROKER_JAAS)
    assert set(sections) == {"KafkaServer", "Client"}
    (server,) = sections["KafkaServer"]
    assert (server.class_name, server.options["user_admin"]) == (PLAIN_LOGIN_MODULE, "admin-secret")
    (client,) = sections["Client"]
    assert client.class_name == DIGEST_LOGIN_MODULE
    assert client.flag == "required"
    assert client.options == {"username": "kafka", "password": 'zk "quoted" secret'}
    assert "secret" not in repr(client)


def test_a_section_named_twice_keeps_every_module_in_order() -> None:
    text = "A { one required; }; B { x optional; }; A { two sufficient; };"
    assert [module.class_name for module in parse_config(text)["A"]] == ["one", "two"]
    assert parse_config("  // nothing but a comment\n") == {}


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            f'{SCRAM_LOGIN_MODULE} required username="alice" password="alice-pw";',
            LoginModule(SCRAM_LOGIN_MODULE, "required", {"username": "alice", "password": "alice-pw"}),
        ),
        (
            f'{SCRAM_LOGIN_MODULE} required username="tok" password="{HMAC}" tokenauth=TRUE;',
            LoginModule(SCRAM_LOGIN_MODULE, "required", {"username": "tok", "password": HMAC, "tokenauth": "TRUE"}),
        ),
        (
            f"{SCRAM_LOGIN_MODULE} REQUIRED username=alice password=pw;",
            LoginModule(SCRAM_LOGIN_MODULE, "required", {"username": "alice", "password": "pw"}),
        ),
        (
            f'  {SCRAM_LOGIN_MODULE}   required\n  username="alice"\n  password="p;w=\\"x\\"" ;  ',
            LoginModule(SCRAM_LOGIN_MODULE, "required", {"username": "alice", "password": 'p;w="x"'}),
        ),
        (
            f'{PLAIN_LOGIN_MODULE} optional username="bob" /* a comment */ password="b\\tob\\\\pw";',
            LoginModule(PLAIN_LOGIN_MODULE, "optional", {"username": "bob", "password": "b\tob\\pw"}),
        ),
    ],
)
def test_a_kafka_client_entry(entry: str, expected: LoginModule) -> None:
    assert parse_login_module(entry) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('Client { x required password="hunter2"', "unexpected end of file"),
        ('Client { x required password="hunter2 ; };', "line 1: unterminated"),
        ('Client { x mandatory password="hunter2"; };', "line 1: expected a control flag"),
        ('Client {\n x required password "hunter2"; };', "line 2: expected '='"),
        ('Client { x required password="hunter2"; }', "unexpected end of file, expected ';'"),
        ('Client { x required password="hunter2" /* never closed', "line 1: unterminated"),
    ],
)
def test_file_syntax_errors_name_the_line_never_the_values(text: str, message: str) -> None:
    with pytest.raises(JaasSyntaxError) as error:
        parse_config(text)
    assert message in str(error.value)
    assert "hunter2" not in str(error.value)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (f'{SCRAM_LOGIN_MODULE} required username="alice" password="hunter2"', "unexpected end of entry"),
        (f'{SCRAM_LOGIN_MODULE} mandatory username="a" password="hunter2";', "expected a control flag"),
        (f'{SCRAM_LOGIN_MODULE} required username="a" password="hunter2;', "unterminated"),
        (
            f'{SCRAM_LOGIN_MODULE} required username="a" password="hunter2"; {SCRAM_LOGIN_MODULE} required;',
            "one login module only",
        ),
        (f'{SCRAM_LOGIN_MODULE} required username "a" password="hunter2";', "expected '='"),
        ("", "unexpected end of entry, expected a login module class"),
    ],
)
def test_entry_syntax_errors_never_show_the_values(entry: str, reason: str) -> None:
    with pytest.raises(JaasSyntaxError) as error:
        parse_login_module(entry)
    assert reason in error.value.reason
    assert "hunter2" not in str(error.value)
    assert "\n" not in str(error.value)


def test_an_entry_renders_on_one_line_as_a_kafka_client_writes_it() -> None:
    module = LoginModule(SCRAM_LOGIN_MODULE, "required", {"username": "tok", "password": HMAC, "tokenauth": "true"})
    line = render_login_module(module)
    assert line == f'{SCRAM_LOGIN_MODULE} required username="tok" password="{HMAC}" tokenauth="true";'
    assert parse_login_module(line) == module


def test_a_section_renders_each_option_on_its_own_line() -> None:
    module = LoginModule(SCRAM_LOGIN_MODULE, "required", {"username": "tok", "password": "pw"})
    assert render_section("KafkaClient", [module]) == (
        f'KafkaClient {{\n  {SCRAM_LOGIN_MODULE} required\n  username="tok"\n  password="pw";\n}};\n'
    )
    assert parse_config(render_section("KafkaClient", [module])) == {"KafkaClient": [module]}


@pytest.mark.parametrize("value", ['a"b', "a\\b", "line\nbreak", 'p;w="x" } {', "", "a\rb"])
def test_any_value_survives_a_round_trip(value: str) -> None:
    module = LoginModule(DIGEST_LOGIN_MODULE, "required", {"username": "kafka", "password": value})
    assert parse_login_module(render_login_module(module)) == module
    assert parse_config(render_section("Client", [module])) == {"Client": [module]}
