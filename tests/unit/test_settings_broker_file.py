"""A broker's server.properties as kts's configuration file: kts's listener key, the broker's ``listeners``
left alone, and misspelled kts keys refused (docs/configuration.md#a-brokers-serverproperties).

tests/conftest.py removes every ``KTS_*`` variable before each test, so only what a test sets is seen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.backends import all_setting_fields, load_settings
from app.config_names.typos import edit_distance, is_kafka_key, likely_intended
from app.settings import ConfigError, property_key
from app.storage.zk.settings import ZooKeeperSettings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kafka-3.x-server.properties"
SECRET = "Sup3r-S3cret-Value"
REQUIRED = {"zookeeper.connect": "zk1:2181/kafka", "delegation.token.secret.key": SECRET}
KTS_KEYS = sorted(property_key(name) for name in all_setting_fields())


def broker_file(tmp_path: Path, extra: str = "") -> Path:
    text = FIXTURE.read_text(encoding="utf-8").replace("@SECRET@", SECRET).replace("@ZOOKEEPER@", "zk1:2181/kafka")
    path = tmp_path / "server.properties"
    path.write_text(text + extra, encoding="utf-8")
    return path


def write(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()), encoding="utf-8")
    return path


# -------------------- a broker's file as it is


def test_a_brokers_server_properties_is_read_as_it_is(tmp_path: Path) -> None:
    settings = load_settings(broker_file(tmp_path))
    assert settings.group(ZooKeeperSettings).connect == "zk1:2181/kafka"
    assert settings.secret_key == SECRET
    assert [str(p) for p in settings.super_user_principals] == [
        "User:admin",
        "User:CN=kafka-1.example.com,OU=Kafka,O=Example",
    ]
    assert settings.ssl_principal_mapping_rules == r"RULE:^CN=([a-z0-9-]+)\.example\.com,.*$/$1/L,DEFAULT"
    # The brokers' SASL_SSL listeners are theirs: kts keeps its default and says nothing about a rename.
    assert settings.http_listeners == "http://127.0.0.1:8080"
    assert settings.listeners_deprecation is None
    # ssl.client.auth=requested is the brokers' (for their SSL listeners), not a demand on kts's http listener.
    assert settings.ssl_client_auth == "none"


def test_kts_keys_added_to_a_brokers_file_apply(tmp_path: Path) -> None:
    for name in ("cert.pem", "key.pem", "ca.pem"):
        (tmp_path / name).write_text("x")
    extra = (
        "\n# kts\nhttp.listeners=https://0.0.0.0:8443\n"
        f"ssl.certfile={tmp_path / 'cert.pem'}\nssl.keyfile={tmp_path / 'key.pem'}\nssl.cafile={tmp_path / 'ca.pem'}\n"
        "audit.db.url=sqlite:////var/lib/kts/audit.db\nservice.id=kts-1\n"
    )
    settings = load_settings(broker_file(tmp_path, extra))
    assert (settings.listener_scheme, settings.listener_host, settings.listener_port) == ("https", "0.0.0.0", 8443)  # noqa: S104
    # With kts's own https listener, the file's ssl.client.auth applies to it as well.
    assert settings.ssl_client_auth == "requested"
    assert (settings.audit_db_url, settings.service_id) == ("sqlite:////var/lib/kts/audit.db", "kts-1")


def test_an_https_listener_with_the_brokers_client_auth_needs_a_cafile(tmp_path: Path) -> None:
    for name in ("cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    extra = (
        f"\nhttp.listeners=https://0.0.0.0:8443\nssl.certfile={tmp_path / 'cert.pem'}\n"
        f"ssl.keyfile={tmp_path / 'key.pem'}\n"
    )
    with pytest.raises(ConfigError, match=r"^ssl\.client\.auth: .*ssl\.cafile"):
        load_settings(broker_file(tmp_path, extra))


# -------------------- http.listeners and the older listeners


def test_http_listeners_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_HTTP_LISTENERS", "http://0.0.0.0:9000")
    settings = load_settings(broker_file(tmp_path))
    assert (settings.listener_host, settings.listener_port) == ("0.0.0.0", 9000)  # noqa: S104


def test_listeners_of_http_urls_are_still_kts_but_deprecated(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path / "kts.properties", {**REQUIRED, "listeners": "http://127.0.0.2:9001"}))
    assert (settings.listener_host, settings.listener_port) == ("127.0.0.2", 9001)
    warning = settings.listeners_deprecation
    assert warning is not None and "http.listeners" in warning and "\n" not in warning


def test_legacy_listeners_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTS_LISTENERS", "http://127.0.0.3:9002")
    settings = load_settings(write(tmp_path / "kts.properties", REQUIRED))
    assert settings.listener_port == 9002 and settings.listeners_deprecation is not None


@pytest.mark.parametrize("brokers", ["PLAINTEXT://:9092", "SASL_SSL://:9093,http://0.0.0.0:8080", "ftp://x"])
def test_listeners_with_any_non_http_entry_are_the_brokers_and_ignored(tmp_path: Path, brokers: str) -> None:
    settings = load_settings(write(tmp_path / "kts.properties", {**REQUIRED, "listeners": brokers}))
    assert settings.http_listeners == "http://127.0.0.1:8080"
    assert settings.listeners_deprecation is None


def test_http_listeners_wins_over_listeners(tmp_path: Path) -> None:
    values = {**REQUIRED, "listeners": "http://127.0.0.2:9001", "http.listeners": "http://127.0.0.4:9004"}
    settings = load_settings(write(tmp_path / "kts.properties", values))
    assert settings.listener_port == 9004 and settings.listeners_deprecation is None


# -------------------- misspelled kts keys


@pytest.mark.parametrize(
    ("typo", "intended"),
    [
        ("http.listener", "http.listeners"),
        ("zookeeper.ssl.cafle", "zookeeper.ssl.cafile"),
        ("audit.db.ulr", "audit.db.url"),
        ("servce.id", "service.id"),
        ("Super.users", "super.users"),
        ("delegation.token.secret.kye", "delegation.token.secret.key"),
    ],
)
def test_a_misspelled_kts_key_refuses_the_start_naming_the_intended_key(
    tmp_path: Path, typo: str, intended: str
) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_settings(broker_file(tmp_path, f"\n{typo}=value\n"))
    message = str(excinfo.value)
    assert message == f"{typo}: not a kts or Kafka key; did you mean {intended}?"
    assert SECRET not in message


def test_unknown_keys_far_from_kts_keys_are_ignored(tmp_path: Path) -> None:
    load_settings(broker_file(tmp_path, "\nconfluent.support.metrics.enable=false\nmy.own.setting=1\n"))


def test_a_kafka_key_near_a_kts_key_is_not_taken_for_a_typo() -> None:
    """Were kts to get a key one edit away from a Kafka key, a broker's file would still be read as it is."""
    assert likely_intended("log.dirs", ["log.dirz"]) is None
    assert likely_intended("log.dirq", ["log.dirz"]) == "log.dirz"
    assert (
        likely_intended("listener.name.sasl_ssl.ssl.client.auth", ["listener.name.sasl_ssl.ssl.client.auth2"]) is None
    )
    assert is_kafka_key("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config")


def test_every_key_of_the_broker_fixture_is_kafkas_or_kts() -> None:
    """The fixture is a real broker's vocabulary: the list of Kafka names knows every key in it."""
    from app.settings import read_properties

    keys = read_properties(FIXTURE)
    assert [key for key in keys if not is_kafka_key(key) and key not in KTS_KEYS] == []


@pytest.mark.parametrize(
    ("first", "second", "distance"), [("abc", "abc", 0), ("abc", "abd", 1), ("abc", "ba", 2), ("", "abcd", 3)]
)
def test_edit_distance(first: str, second: str, distance: int) -> None:
    assert edit_distance(first, second) == distance


def test_http_listeners_from_the_environment_wins_over_the_files_listeners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KTS_HTTP_LISTENERS", "http://127.0.0.5:9005")
    settings = load_settings(write(tmp_path / "kts.properties", {**REQUIRED, "listeners": "http://127.0.0.2:9001"}))
    assert settings.listener_port == 9005 and settings.listeners_deprecation is None
