"""``/config/users/<name>`` data as kafka-configs.sh writes it (docs/kafka-compatibility.md#scram-user-credentials)."""

from __future__ import annotations

import base64
import json

import pytest

from app.domain.credentials import Mechanism, ScramCredential
from app.storage.zk.znodes import ConfigChangeZNode, MalformedZNode, UserConfigZNode

CREDENTIAL = ScramCredential(
    salt=bytes(range(32)),
    stored_key=bytes(range(100, 164)),
    server_key=bytes(range(164, 228)),
    iterations=4096,
)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


# The shape kafka-configs.sh --alter --add-config
# 'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...],producer_byte_rate=1024' leaves in the znode
# (the key bytes themselves are illustrative).
SHA256_TEXT = (
    "salt=MWtxOWJvZnZ0dW5ha3BxM3hoZnB4a2F6NA==,"
    "stored_key=CyANh0OIfJP/KqP4hxdXjsW4pDcqtd3Kq8ai7BfAkGM=,"
    "server_key=CuFyq7WENlTe9WE99WMHoP06H3i63sN4wnn3NmIkzVI=,"
    "iterations=4096"
)
SHA512_TEXT = (
    "salt=MTFmZGdkM2Z2bWx5OXNwemQ2ZHB5cGVndXU=,"
    "stored_key=" + b64(bytes(64)) + ",server_key=" + b64(bytes(range(64))) + ",iterations=8192"
)
KAFKA_CONFIGS_ZNODE = json.dumps(
    {
        "version": 1,
        "config": {"SCRAM-SHA-512": SHA512_TEXT, "producer_byte_rate": "1024", "SCRAM-SHA-256": SHA256_TEXT},
    }
).encode("utf-8")


def test_credential_string_has_kafka_field_order() -> None:
    assert UserConfigZNode.credential_to_string(CREDENTIAL) == (
        f"salt={b64(CREDENTIAL.salt)},stored_key={b64(CREDENTIAL.stored_key)},"
        f"server_key={b64(CREDENTIAL.server_key)},iterations=4096"
    )


def test_credential_string_round_trip() -> None:
    assert UserConfigZNode.credential_from_string(UserConfigZNode.credential_to_string(CREDENTIAL)) == CREDENTIAL


def test_credential_from_kafka_string() -> None:
    credential = UserConfigZNode.credential_from_string(SHA256_TEXT)
    assert credential.salt == b"1kq9bofvtunakpq3xhfpxkaz4"
    assert credential.iterations == 4096
    assert len(credential.stored_key) == 32
    assert UserConfigZNode.credential_to_string(credential) == SHA256_TEXT


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("garbage", id="no-fields"),
        pytest.param(SHA256_TEXT.replace("iterations=4096", "iterations=many"), id="non-integer-iterations"),
        pytest.param(SHA256_TEXT.replace(",iterations=4096", ""), id="missing-iterations"),
        pytest.param(SHA256_TEXT.replace("salt=", "pepper="), id="missing-salt"),
        pytest.param(SHA256_TEXT.replace("stored_key=", "stored_key=!!"), id="bad-base64"),
        pytest.param(SHA256_TEXT + ",stray", id="field-without-equals"),
    ],
)
def test_malformed_credential_string_is_refused(text: str) -> None:
    with pytest.raises(MalformedZNode):
        UserConfigZNode.credential_from_string(text)


def test_decode_kafka_configs_znode_keeps_every_key() -> None:
    assert UserConfigZNode.decode(KAFKA_CONFIGS_ZNODE) == {
        "SCRAM-SHA-512": SHA512_TEXT,
        "producer_byte_rate": "1024",
        "SCRAM-SHA-256": SHA256_TEXT,
    }


def test_credentials_extracts_both_mechanisms_and_ignores_quotas() -> None:
    found = UserConfigZNode.credentials(UserConfigZNode.decode(KAFKA_CONFIGS_ZNODE))
    assert set(found) == {Mechanism.SCRAM_SHA_256, Mechanism.SCRAM_SHA_512}
    assert found[Mechanism.SCRAM_SHA_512].iterations == 8192
    assert found[Mechanism.SCRAM_SHA_256] == UserConfigZNode.credential_from_string(SHA256_TEXT)


def test_credentials_treats_a_malformed_credential_as_absent() -> None:
    config = {"SCRAM-SHA-256": "salt=###", "SCRAM-SHA-512": SHA512_TEXT, "producer_byte_rate": "1024"}
    assert set(UserConfigZNode.credentials(config)) == {Mechanism.SCRAM_SHA_512}


def test_credentials_of_config_without_scram_entries_is_empty() -> None:
    assert UserConfigZNode.credentials({"producer_byte_rate": "1024"}) == {}


def test_encode_decode_round_trip_keeps_other_keys() -> None:
    config = UserConfigZNode.decode(KAFKA_CONFIGS_ZNODE)
    config["SCRAM-SHA-256"] = UserConfigZNode.credential_to_string(CREDENTIAL)
    assert UserConfigZNode.decode(UserConfigZNode.encode(config)) == config


def test_encode_is_compact_versioned_json() -> None:
    assert (
        UserConfigZNode.encode({"producer_byte_rate": "1024"})
        == b'{"version":1,"config":{"producer_byte_rate":"1024"}}'
    )


@pytest.mark.parametrize("data", [None, b""])
def test_decode_of_absent_or_empty_znode_is_an_empty_config(data: bytes | None) -> None:
    assert UserConfigZNode.decode(data) == {}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"not json", id="not-json"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
        pytest.param(b"[]", id="not-an-object"),
        pytest.param(b'{"version":1}', id="no-config"),
        pytest.param(b'{"version":1,"config":[]}', id="config-not-an-object"),
        pytest.param(b'{"version":1,"config":{"producer_byte_rate":1024}}', id="non-string-value"),
    ],
)
def test_decode_refuses_malformed_znodes(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        UserConfigZNode.decode(data)


def test_credential_repr_hides_keys() -> None:
    text = repr(CREDENTIAL)
    assert b64(CREDENTIAL.stored_key) not in text
    assert CREDENTIAL.stored_key.hex() not in text
    assert "4096" in text


# --- config change notification -------------------------------------------------------------------------------


def test_user_config_change_is_exact_compact_json() -> None:
    assert ConfigChangeZNode.encode("alice") == b'{"version":2,"entity_path":"users/alice"}'


def test_user_config_change_sanitizes_the_user_name() -> None:
    assert ConfigChangeZNode.encode("CN=a b,O=x*y") == b'{"version":2,"entity_path":"users/CN%3Da%20b%2CO%3Dx%2Ay"}'


def test_user_config_change_of_non_ascii_name_is_percent_encoded() -> None:
    assert ConfigChangeZNode.encode("é") == b'{"version":2,"entity_path":"users/%C3%A9"}'


def test_user_config_paths_are_kafkas() -> None:
    assert UserConfigZNode.path("CN=a b") == "/config/users/CN%3Da%20b"
    assert ConfigChangeZNode.PREFIX == "/config/changes/config_change_"


@pytest.mark.parametrize(
    ("data", "user"),
    [
        (b'{"version":2,"entity_path":"users/alice"}', "alice"),  # kafka-configs.sh --alter --entity-type users
        (b'{"version":2,"entity_path":"users/CN%3Da%20b%2CO%3Dx%2Ay"}', "CN=a b,O=x*y"),
        (b'{"version":2,"entity_path":"users/%C3%A9"}', "\u00e9"),
        (b'{"version":2,"entity_path":"users/alice/clients/app-1"}', "alice"),  # a user and client quota
        (b'{"version":2,"entity_path":"users/<default>"}', "<default>"),
        (b'{"version":2,"entity_path":"topics/orders"}', None),
        (b'{"version":2,"entity_path":"brokers/0"}', None),
        (b'{"version":1,"entity_type":"topics","entity_name":"orders"}', None),
        (b'{"version":1,"entity_type":"clients","entity_name":"app-1"}', None),
    ],
)
def test_config_change_names_the_changed_user(data: bytes, user: str | None) -> None:
    assert ConfigChangeZNode.changed_user(data) == user


def test_config_change_written_by_kts_names_its_user() -> None:
    for name in ("alice", "CN=a b,O=x*y", "\u00e9", "a/b"):
        assert ConfigChangeZNode.changed_user(ConfigChangeZNode.encode(name)) == name


@pytest.mark.parametrize(
    "data", [b"", b"\xff", b"[]", b'{"version":2}', b'{"version":3,"entity_path":"users/a"}', b'{"entity_path":1}']
)
def test_an_unreadable_config_change_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedZNode):
        ConfigChangeZNode.changed_user(data)
