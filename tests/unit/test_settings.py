"""Settings: a properties file with Kafka's key names, overridden by ``KTS_*`` variables (docs/configuration.md).

tests/conftest.py removes every ``KTS_*`` variable before each test, so only what a test sets is seen.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from app.backends import load_settings
from app.domain.principal import KafkaPrincipal
from app.settings import ConfigError, Settings, jwt_super_user_warnings
from app.storage.zk.settings import ZooKeeperSettings

SECRET = "Sup3r-S3cret-Value"
CONNECT = "zk1:2181,zk2:2181/kafka"
REQUIRED = {"zookeeper.connect": CONNECT, "delegation.token.secret.key": SECRET}


def write_properties(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8")
    return path


@pytest.fixture
def properties(tmp_path: Path) -> Path:
    return tmp_path / "server.properties"


def load_file(path: Path, values: dict[str, str]) -> Settings:
    return load_settings(write_properties(path, values))


def config_error(path: Path, values: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as excinfo:
        load_file(path, values)
    return str(excinfo.value)


# -------------------- reading the file


def test_reads_kafka_key_names_from_a_properties_file(properties: Path, tmp_path: Path) -> None:
    for name in ("cert.pem", "key.pem", "ca.pem"):
        (tmp_path / name).write_text("x")
    settings = load_file(
        properties,
        {
            **REQUIRED,
            "delegation.token.max.lifetime.ms": "3600000",
            "delegation.token.expiry.time.ms": "60000",
            "delegation.token.expiry.check.interval.ms": "1000",
            "super.users": "User:admin;User:ops",
            "allow.everyone.if.no.acl.found": "true",
            "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/L,DEFAULT",
            "zookeeper.session.timeout.ms": "6000",
            "http.listeners": "https://127.0.0.2:9000",
            "ssl.certfile": str(tmp_path / "cert.pem"),
            "ssl.keyfile": str(tmp_path / "key.pem"),
            "ssl.cafile": str(tmp_path / "ca.pem"),
            "audit.db.url": "sqlite:////var/lib/kts/audit.db",
            "ssl.client.auth": "requested",
            "service.id": "kts-1",
        },
    )
    assert settings.group(ZooKeeperSettings).connect == CONNECT
    assert settings.secret_key == SECRET
    assert settings.delegation_token_max_lifetime_ms == 3_600_000
    assert settings.delegation_token_expiry_time_ms == 60_000
    assert settings.delegation_token_expiry_check_interval_ms == 1_000
    assert settings.super_user_principals == [KafkaPrincipal.user("admin"), KafkaPrincipal.user("ops")]
    assert settings.allow_everyone_if_no_acl_found is True
    assert settings.ssl_principal_mapping_rules == "RULE:^CN=(.*?),.*$/$1/L,DEFAULT"
    assert settings.group(ZooKeeperSettings).session_timeout_ms == 6_000
    assert (settings.listener_scheme, settings.listener_host, settings.listener_port) == ("https", "127.0.0.2", 9000)
    assert settings.audit_db_url == "sqlite:////var/lib/kts/audit.db"
    assert settings.ssl_client_auth == "requested"
    assert settings.service_id == "kts-1"


@pytest.mark.parametrize("version", [1, 3])
def test_token_znode_version_from_the_file(properties: Path, version: int) -> None:
    settings = load_file(properties, {**REQUIRED, "token.znode.version": str(version)})
    assert settings.group(ZooKeeperSettings).token_znode_version == version


def test_token_znode_version_from_the_environment(properties: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_TOKEN_ZNODE_VERSION", "1")
    assert load_file(properties, REQUIRED).group(ZooKeeperSettings).token_znode_version == 1


def test_token_znode_version_as_an_explicit_integer_override() -> None:
    settings = load_settings(zookeeper_connect=CONNECT, delegation_token_secret_key=SECRET, token_znode_version=1)
    assert settings.group(ZooKeeperSettings).token_znode_version == 1


def test_unknown_broker_keys_are_ignored(properties: Path) -> None:
    settings = load_file(
        properties,
        {
            "broker.id": "1",
            "log.dirs": "/var/lib/kafka",
            "num.partitions": "3",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "some.future.key": "whatever",
            **REQUIRED,
        },
    )
    assert settings.group(ZooKeeperSettings).connect == CONNECT


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.properties")


# -------------------- environment


def test_kts_environment_overrides_the_file(properties: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_ZOOKEEPER_CONNECT", "other:2181/chroot")
    monkeypatch.setenv("KTS_DELEGATION_TOKEN_MAX_LIFETIME_MS", "1000")
    monkeypatch.setenv("KTS_DELEGATION_TOKEN_SECRET_KEY", "from-the-environment")
    settings = load_file(properties, {**REQUIRED, "delegation.token.max.lifetime.ms": "5000"})
    assert settings.group(ZooKeeperSettings).connect == "other:2181/chroot"
    assert settings.delegation_token_max_lifetime_ms == 1000
    assert settings.secret_key == "from-the-environment"


def test_environment_alone_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_ZOOKEEPER_CONNECT", CONNECT)
    monkeypatch.setenv("KTS_DELEGATION_TOKEN_SECRET_KEY", SECRET)
    monkeypatch.setenv("KTS_SUPER_USERS", "User:root")
    settings = load_settings()
    assert settings.group(ZooKeeperSettings).connect == CONNECT
    assert settings.secret_key == SECRET
    assert settings.super_user_principals == [KafkaPrincipal.user("root")]


def test_explicit_overrides_win_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_ZOOKEEPER_CONNECT", CONNECT)
    monkeypatch.setenv("KTS_DELEGATION_TOKEN_SECRET_KEY", SECRET)
    assert load_settings(zookeeper_connect="zk9:2181").group(ZooKeeperSettings).connect == "zk9:2181"


def test_invalid_environment_value_names_the_key(properties: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_DELEGATION_TOKEN_EXPIRY_TIME_MS", "-5")
    message = config_error(properties, REQUIRED)
    assert message.startswith("delegation.token.expiry.time.ms")


def test_the_zookeeper_jaas_file_is_read_once_at_load(properties: Path, tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    module = "org.apache.zookeeper.server.auth.DigestLoginModule"
    jaas.write_text(f'Client {{ {module} required username="kafka" password="pw"; }};')
    settings = load_file(properties, {**REQUIRED, "zookeeper.jaas.file": str(jaas), "zookeeper.set.acl": "true"})
    jaas.unlink()  # using the settings afterwards reads no file

    assert settings.group(ZooKeeperSettings).security.identity == "SASL user 'kafka'"
    assert settings.group(ZooKeeperSettings).security is settings.group(ZooKeeperSettings).security


# -------------------- required keys


def test_missing_zookeeper_connect_is_a_one_line_error_naming_the_key(properties: Path) -> None:
    message = config_error(properties, {"delegation.token.secret.key": SECRET})
    assert "zookeeper.connect" in message
    assert "\n" not in message
    assert SECRET not in message


def test_missing_secret_key_names_the_key(properties: Path) -> None:
    message = config_error(properties, {"zookeeper.connect": CONNECT})
    assert "delegation.token.secret.key" in message
    assert "\n" not in message


def test_empty_secret_key_names_the_key(properties: Path) -> None:
    message = config_error(properties, {"zookeeper.connect": CONNECT, "delegation.token.secret.key": ""})
    assert "delegation.token.secret.key" in message


def test_empty_secret_key_in_environment_names_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_ZOOKEEPER_CONNECT", CONNECT)
    monkeypatch.setenv("KTS_DELEGATION_TOKEN_SECRET_KEY", "")
    with pytest.raises(ConfigError, match=r"delegation\.token\.secret\.key"):
        load_settings()


def test_master_key_is_used_when_secret_key_is_absent(properties: Path) -> None:
    settings = load_file(properties, {"zookeeper.connect": CONNECT, "delegation.token.master.key": "old-name"})
    assert settings.secret_key == "old-name"


def test_secret_key_wins_over_master_key(properties: Path) -> None:
    settings = load_file(properties, {**REQUIRED, "delegation.token.master.key": "old-name"})
    assert settings.secret_key == SECRET


def test_master_key_is_not_used_when_secret_key_is_present_but_empty(properties: Path) -> None:
    message = config_error(
        properties,
        {"zookeeper.connect": CONNECT, "delegation.token.secret.key": "", "delegation.token.master.key": "x"},
    )
    assert "delegation.token.secret.key" in message


# -------------------- invalid values


INVALID_VALUES = [
    pytest.param("token.znode.version", "2", id="znode-version-2"),
    pytest.param("token.znode.version", "4", id="znode-version-4"),
    pytest.param("http.listeners", "ftp://x", id="http-listener-ftp"),
    pytest.param("http.listeners", "PLAINTEXT://:9092", id="http-listener-kafka-style"),
    pytest.param("http.listeners", "http://:8080", id="http-listener-without-host"),
    pytest.param("http.listeners", "http://a:1,http://b:2", id="http-listener-list"),
    pytest.param("listeners", "http://:8080", id="listener-without-host"),
    pytest.param("listeners", "http://127.0.0.1:99999", id="listener-port-out-of-range"),
    pytest.param("listeners", "http://a:1,http://b:2", id="listener-list"),
    pytest.param("zookeeper.connect", "zk1", id="connect-without-port"),
    pytest.param("zookeeper.connect", "zk1:2181,zk2", id="connect-second-without-port"),
    pytest.param("zookeeper.connect", "zk1:port", id="connect-non-numeric-port"),
    pytest.param("zookeeper.connect", "/kafka", id="connect-only-chroot"),
    pytest.param("zookeeper.connect", "zk1:2181 zk2:2181", id="connect-space-separated"),
    pytest.param("delegation.token.max.lifetime.ms", "-1", id="negative-max-lifetime"),
    pytest.param("delegation.token.max.lifetime.ms", "0", id="zero-max-lifetime"),
    pytest.param("delegation.token.expiry.time.ms", "-1", id="negative-expiry-time"),
    pytest.param("delegation.token.expiry.check.interval.ms", "0", id="zero-check-interval"),
    pytest.param("delegation.token.max.lifetime.ms", "a week", id="non-numeric-lifetime"),
    pytest.param("super.users", "User:admin;alice", id="super-user-without-type"),
    pytest.param("super.users", "User:", id="super-user-without-name"),
    pytest.param("ssl.client.auth", "maybe", id="ssl-client-auth"),
    pytest.param("zookeeper.session.timeout.ms", "10", id="session-timeout-too-short"),
    pytest.param("allow.everyone.if.no.acl.found", "perhaps", id="non-boolean"),
    pytest.param("token.revoke.on.credential.delete", "sometimes", id="revoke-on-credential-delete"),
    pytest.param("token.revoke.on.acl.delete", "2", id="revoke-on-acl-delete"),
    pytest.param("zookeeper.children.max.bytes", "0", id="zero-children-budget"),
    pytest.param("zookeeper.children.max.bytes", "-1000", id="negative-children-budget"),
    pytest.param("zookeeper.children.max.bytes", "88", id="children-budget-below-an-empty-listing"),
    pytest.param("zookeeper.children.max.bytes", "1000000.5", id="fractional-children-budget"),
    pytest.param("zookeeper.children.max.bytes", "1MB", id="non-numeric-children-budget"),
    pytest.param("http.management.listeners", "ftp://0.0.0.0:9090", id="management-listener-ftp"),
    pytest.param("http.management.listeners", "0.0.0.0:9090", id="management-listener-without-scheme"),
    pytest.param("http.management.listeners", "http://a:1,http://b:2", id="management-listener-list"),
    pytest.param("http.management.listeners", "http://127.0.0.1:8080", id="management-listener-on-the-main-port"),
    pytest.param("http.management.listeners", "https://0.0.0.0:9443", id="management-https-without-certificate"),
    pytest.param("sasl.oauthbearer.principal.prefix", "jwt *", id="jwt-prefix-with-space-and-wildcard"),
    pytest.param("sasl.oauthbearer.principal.prefix", "a;b", id="jwt-prefix-with-separator"),
    pytest.param("sasl.oauthbearer.max.lifetime.seconds", "0", id="zero-jwt-lifetime"),
    pytest.param("sasl.oauthbearer.max.lifetime.seconds", "a day", id="non-numeric-jwt-lifetime"),
]


@pytest.mark.parametrize(("key", "value"), INVALID_VALUES)
def test_invalid_value_is_a_one_line_config_error_naming_the_key(properties: Path, key: str, value: str) -> None:
    message = config_error(properties, {**REQUIRED, key: value})
    assert message.startswith(key), message
    assert "\n" not in message


@pytest.mark.parametrize(("key", "value"), INVALID_VALUES)
def test_config_error_never_contains_the_secret(properties: Path, key: str, value: str) -> None:
    assert SECRET not in config_error(properties, {**REQUIRED, key: value})


def test_https_listener_without_certificate_files_names_the_listener(properties: Path) -> None:
    message = config_error(properties, {**REQUIRED, "http.listeners": "https://0.0.0.0:8443"})
    assert message.startswith("http.listeners")
    assert SECRET not in message
    message = config_error(properties, {**REQUIRED, "listeners": "https://0.0.0.0:8443"})
    assert message.startswith("listeners")


def test_https_listener_with_only_a_certificate_is_refused(properties: Path, tmp_path: Path) -> None:
    message = config_error(
        properties, {**REQUIRED, "http.listeners": "https://0.0.0.0:8443", "ssl.certfile": str(tmp_path / "c.pem")}
    )
    assert message.startswith("http.listeners")


def test_https_listener_with_certificate_and_key(properties: Path, tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("x")
    (tmp_path / "key.pem").write_text("x")
    settings = load_file(
        properties,
        {
            **REQUIRED,
            "http.listeners": "https://0.0.0.0:8443",
            "ssl.certfile": str(tmp_path / "cert.pem"),
            "ssl.keyfile": str(tmp_path / "key.pem"),
        },
    )
    assert (settings.listener_scheme, settings.listener_port) == ("https", 8443)
    assert settings.ssl_certfile == tmp_path / "cert.pem"


def test_empty_master_key_alone_is_a_missing_secret(properties: Path) -> None:
    message = config_error(properties, {"zookeeper.connect": CONNECT, "delegation.token.master.key": ""})
    assert "delegation.token.secret.key" in message


def test_secret_is_hidden_in_settings_repr(properties: Path) -> None:
    settings = load_file(properties, {**REQUIRED, "delegation.token.master.key": "old-secret"})
    assert SECRET not in repr(settings)
    assert SECRET not in str(settings)
    assert "old-secret" not in repr(settings)


# -------------------- defaults


def test_defaults_match_the_contract(properties: Path) -> None:
    settings = load_file(properties, REQUIRED)
    assert settings.delegation_token_max_lifetime_ms == 604_800_000
    assert settings.delegation_token_expiry_time_ms == 86_400_000
    assert settings.delegation_token_expiry_check_interval_ms == 3_600_000
    assert settings.super_users == ""
    assert settings.super_user_principals == []
    assert settings.allow_everyone_if_no_acl_found is False
    assert settings.ssl_principal_mapping_rules == "DEFAULT"
    assert settings.http_listeners == "http://127.0.0.1:8080"
    assert settings.listeners is None and settings.listeners_deprecation is None
    assert (settings.listener_scheme, settings.listener_host, settings.listener_port) == (
        "http",
        "127.0.0.1",
        8080,
    )
    assert settings.audit_db_url == "sqlite:///./kts-audit.db"
    assert settings.ssl_certfile is None
    assert settings.ssl_keyfile is None
    assert settings.ssl_cafile is None
    assert settings.ssl_client_auth == "none"
    assert settings.group(ZooKeeperSettings).token_znode_version == 3
    assert settings.group(ZooKeeperSettings).session_timeout_ms == 18_000
    assert settings.service_id == socket.gethostname()
    assert settings.delegation_token_master_key is None
    assert (settings.token_revoke_on_credential_delete, settings.token_revoke_on_acl_delete) == (False, False)
    assert settings.http_management_listeners is None and settings.management_scheme is None
    assert settings.sasl_oauthbearer_principal_prefix == ""
    assert settings.sasl_oauthbearer_max_lifetime_seconds == 86_400


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("http://0.0.0.0:9090", ("http", "0.0.0.0", 9090)),  # noqa: S104 - a value under test, not a bind
        ("http://[::]:9090", ("http", "::", 9090)),
        (" http://127.0.0.1:9090 ", ("http", "127.0.0.1", 9090)),
    ],
)
def test_the_management_listener_is_one_url(properties: Path, value: str, where: tuple[str, str, int]) -> None:
    settings = load_file(properties, {**REQUIRED, "http.management.listeners": value})
    assert (settings.management_scheme, settings.management_host, settings.management_port) == where


def test_an_empty_management_listener_is_none(properties: Path) -> None:
    assert load_file(properties, {**REQUIRED, "http.management.listeners": ""}).http_management_listeners is None


# -------------------- super users


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("User:a;User:b", ["User:a", "User:b"]),
        ("User:a; User:b ;", ["User:a", "User:b"]),
        ("User:CN=admin,O=Acme", ["User:CN=admin,O=Acme"]),
        ("User:a", ["User:a"]),
        ("", []),
        (" ; ", []),
    ],
)
def test_super_user_principals_parses_semicolon_separated_principals(
    properties: Path, value: str, expected: list[str]
) -> None:
    settings = load_file(properties, {**REQUIRED, "super.users": value})
    assert settings.super_user_principals == [KafkaPrincipal.parse(text) for text in expected]


def test_token_renewers_add_reads_user_principals_and_refuses_other_types(properties: Path) -> None:
    settings = load_file(properties, {**REQUIRED, "token.renewers.add": "User:kts; User:kts;User:ops"})
    assert settings.group(ZooKeeperSettings).added_renewers == (KafkaPrincipal.user("kts"), KafkaPrincipal.user("ops"))
    assert load_file(properties, REQUIRED).group(ZooKeeperSettings).added_renewers == ()
    message = config_error(properties, {**REQUIRED, "token.renewers.add": "Group:ops"})
    assert message.startswith("token.renewers.add")
    assert "Group:ops" in message


def test_super_users_error_names_the_key_and_the_bad_entry(properties: Path) -> None:
    message = config_error(properties, {**REQUIRED, "super.users": "User:a;bob"})
    assert message.startswith("super.users")
    assert "bob" in message


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"ssl.client.auth": "required"}, "ssl.client.auth"),
        (
            {
                "listeners": "https://127.0.0.1:8443",
                "ssl.certfile": "/nonexistent/c.pem",
                "ssl.keyfile": "/nonexistent/k.pem",
            },
            "ssl.certfile",
        ),
        ({"ssl.principal.mapping.rules": "RULE:[broken"}, "ssl.principal.mapping.rules"),
    ],
)
def test_tls_settings_are_checked_at_start(properties: Path, values: dict[str, str], key: str) -> None:
    assert key in config_error(properties, {**REQUIRED, **values})


def test_workload_jwt_keys_as_kafka_names_them(properties: Path, tmp_path: Path) -> None:
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text('{"keys": []}')
    settings = load_file(
        properties,
        {
            **REQUIRED,
            "sasl.oauthbearer.jwks.endpoint.url": jwks_file.as_uri(),
            "sasl.oauthbearer.expected.issuer": "https://issuer.example",
            "sasl.oauthbearer.expected.audience": "kts, kafka",
            "sasl.oauthbearer.sub.claim.name": "client_id",
            "sasl.oauthbearer.clock.skew.seconds": "5",
            "sasl.oauthbearer.jwks.endpoint.refresh.ms": "60000",
        },
    )
    assert settings.sasl_oauthbearer_jwks_endpoint_url == jwks_file.as_uri()
    assert settings.jwt_audiences == ("kts", "kafka")
    assert (settings.sasl_oauthbearer_sub_claim_name, settings.sasl_oauthbearer_clock_skew_seconds) == ("client_id", 5)
    assert settings.sasl_oauthbearer_jwks_endpoint_refresh_ms == 60_000


def test_workload_jwts_are_off_by_default(properties: Path) -> None:
    settings = load_file(properties, REQUIRED)
    assert settings.sasl_oauthbearer_jwks_endpoint_url is None
    assert (settings.sasl_oauthbearer_clock_skew_seconds, settings.sasl_oauthbearer_jwks_endpoint_refresh_ms) == (
        30,
        3_600_000,
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sasl.oauthbearer.jwks.endpoint.url", "http://issuer.example/jwks", "must be an https:// URL or a file: URL"),
        ("sasl.oauthbearer.jwks.endpoint.url", "file:///nonexistent/jwks.json", "is not a readable file"),
        ("sasl.oauthbearer.jwks.endpoint.cafile", "/nonexistent/ca.pem", "is not a readable file"),
        ("sasl.oauthbearer.clock.skew.seconds", "-1", "greater than or equal to 0"),
        ("sasl.oauthbearer.jwks.endpoint.refresh.ms", "10", "greater than or equal to 1000"),
        ("sasl.oauthbearer.sub.claim.name", "", "at least 1 character"),
    ],
)
def test_bad_workload_jwt_values_are_one_line_naming_the_key(
    properties: Path, key: str, value: str, message: str
) -> None:
    error = config_error(properties, {**REQUIRED, key: value})
    assert error.startswith(f"{key}: ")
    assert message in error
    assert "\n" not in error


@pytest.mark.parametrize(
    ("values", "warned"),
    [
        ({}, []),  # JWT logins off: no JWT can be a super user
        ({"sasl.oauthbearer.jwks.endpoint.url": "JWKS"}, ["User:admin", "User:ops"]),
        ({"sasl.oauthbearer.jwks.endpoint.url": "JWKS", "sasl.oauthbearer.principal.prefix": "jwt:"}, []),
    ],
)
def test_super_users_a_jwt_could_be_are_warned_about_one_line_each(
    properties: Path, tmp_path: Path, values: dict[str, str], warned: list[str]
) -> None:
    jwks_file = tmp_path / "jwks.json"
    jwks_file.write_text('{"keys": []}')
    values = {key: jwks_file.as_uri() if value == "JWKS" else value for key, value in values.items()}
    settings = load_file(properties, {**REQUIRED, "super.users": "User:admin;Group:ops;User:ops", **values})
    warnings = jwt_super_user_warnings(settings)
    assert [warning.split(" ")[1] for warning in warnings] == warned
    for warning in warnings:
        assert "\n" not in warning and "sasl.oauthbearer.principal.prefix" in warning


# -------------------- the lockout's exempt addresses and the audit retention


def test_the_lockout_exempts_no_address_unless_told(properties: Path) -> None:
    """Once loopback by default: whatever shares it (a same-host proxy, a mesh sidecar, kubectl port-forward)
    turned the lockout off for every client behind it."""
    exempt = load_file(properties, REQUIRED).lockout_exempt_addresses
    assert not exempt and "127.0.0.1" not in exempt and "::1" not in exempt
    loopback = load_file(properties, {**REQUIRED, "auth.lockout.exempt.addresses": "127.0.0.1,::1"})
    assert "127.0.0.1" in loopback.lockout_exempt_addresses and "::1" in loopback.lockout_exempt_addresses
    networks = load_file(properties, {**REQUIRED, "auth.lockout.exempt.addresses": "203.0.113.0/24, 2001:db8::/32"})
    assert "203.0.113.4" in networks.lockout_exempt_addresses and "2001:db8::5" in networks.lockout_exempt_addresses


def test_an_exempt_address_that_is_no_address_refuses_the_start(properties: Path) -> None:
    message = config_error(properties, {**REQUIRED, "auth.lockout.exempt.addresses": "127.0.0.1,localhost"})
    assert message == "auth.lockout.exempt.addresses: 'localhost' is not an IP address or CIDR network"


def test_audit_retention_is_unset_by_default_and_at_least_a_day(properties: Path) -> None:
    assert load_file(properties, REQUIRED).audit_retention_days is None
    assert load_file(properties, {**REQUIRED, "audit.retention.days": "90"}).audit_retention_days == 90
    assert config_error(properties, {**REQUIRED, "audit.retention.days": "0"}).startswith("audit.retention.days: ")
