"""The files the sidecar writes: each format read back as a Kafka client reads it; atomic, mode 0600."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import javaproperties
import pytest

from app.cli.client.command_config import TokenCredential, parse_sasl_jaas_config
from app.cli.sidecar.token_file import (
    ClientFileFormat,
    PublishError,
    TokenCredentials,
    TokenFile,
    render,
    write_atomically,
)

TOKEN_ID = "E8gTWaIxRUOaSRH7wY3N1w"
HMAC = "4yNy7/Z+zNgC0bevraCN9fOXatvHfn4ZrHtPzPlrbPxMD2i6+BNIueia0juqmA75Nxpj18hRCE7nMYHojrij4Q=="
CREDENTIALS = TokenCredentials(TOKEN_ID, HMAC, expiry_timestamp=1_700_086_400_000, max_timestamp=1_700_604_800_000)


def test_properties_are_what_a_kafka_client_needs() -> None:
    text = render(ClientFileFormat.PROPERTIES, CREDENTIALS)
    values = javaproperties.loads(text)
    assert values["security.protocol"] == "SASL_SSL"
    assert values["sasl.mechanism"] == "SCRAM-SHA-512"
    jaas = values["sasl.jaas.config"]
    assert jaas.startswith("org.apache.kafka.common.security.scram.ScramLoginModule required ")
    assert parse_sasl_jaas_config(jaas) == TokenCredential(TOKEN_ID, HMAC)
    assert 'tokenauth="true"' in jaas


def test_properties_follow_the_chosen_protocol_and_mechanism() -> None:
    text = render(
        ClientFileFormat.PROPERTIES, CREDENTIALS, security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256"
    )
    values = javaproperties.loads(text)
    assert values["security.protocol"] == "SASL_PLAINTEXT"
    assert values["sasl.mechanism"] == "SCRAM-SHA-256"


def test_jaas_file_has_one_kafka_client_section() -> None:
    text = render(ClientFileFormat.JAAS, CREDENTIALS)
    lines = [line for line in text.splitlines() if not line.startswith("//")]
    assert lines[0] == "KafkaClient {"
    assert lines[-1] == "};"
    body = " ".join(lines[1:-1])
    assert parse_sasl_jaas_config(body) == TokenCredential(TOKEN_ID, HMAC)
    assert 'tokenauth="true";' in body


def test_json_has_the_four_fields() -> None:
    document = json.loads(render(ClientFileFormat.JSON, CREDENTIALS))
    assert document == {
        "tokenId": TOKEN_ID,
        "hmac": HMAC,
        "expiryTimestamp": 1_700_086_400_000,
        "maxTimestamp": 1_700_604_800_000,
    }


@pytest.mark.parametrize(
    ("token_id", "hmac"),
    [('abc" password="x', HMAC), (TOKEN_ID, 'abc"; x'), ("", HMAC), (TOKEN_ID, "a\nb")],
)
def test_values_that_would_need_quoting_are_refused(token_id: str, hmac: str) -> None:
    with pytest.raises(ValueError):
        TokenCredentials(token_id, hmac, 0, 0)


def test_credentials_hide_the_hmac() -> None:
    assert HMAC not in repr(CREDENTIALS)


def test_write_creates_the_file_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    write_atomically(path, "a=1\n")
    assert path.read_text() == "a=1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_write_replaces_a_file_and_its_mode_without_leftovers(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("old")
    path.chmod(0o644)
    reader = path.open()  # a reader holding the old file keeps reading the old content
    write_atomically(path, "new")
    assert reader.read() == "old"
    reader.close()
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["client.properties"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(path, "\udcff")  # not encodable: fails half way
    assert path.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["client.properties"]


def test_write_to_a_missing_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "absent" / "f", "x")


def test_the_vector_hmac_is_standard_base64() -> None:
    assert len(base64.b64decode(HMAC)) == 64


def test_a_token_file_is_rewritten_only_when_its_text_changes_or_it_vanished(tmp_path: Path) -> None:
    token_file = TokenFile(tmp_path / "client.properties")
    token_file.publish(CREDENTIALS)
    first = token_file.path.stat().st_ino
    renewed = TokenCredentials(TOKEN_ID, HMAC, expiry_timestamp=1_700_090_000_000, max_timestamp=1_700_604_800_000)
    token_file.publish(renewed)  # a renewal changes nothing a Kafka client reads from a properties file
    assert token_file.path.stat().st_ino == first
    token_file.path.unlink()
    token_file.publish(renewed)
    assert javaproperties.loads(token_file.path.read_text())["sasl.mechanism"] == "SCRAM-SHA-512"
    json_file = TokenFile(tmp_path / "token.json", ClientFileFormat.JSON)
    json_file.publish(CREDENTIALS)
    json_file.publish(renewed)
    assert json.loads(json_file.path.read_text())["expiryTimestamp"] == 1_700_090_000_000


def test_a_token_file_that_cannot_be_written_is_one_line_without_the_hmac(tmp_path: Path) -> None:
    with pytest.raises(PublishError) as error:
        TokenFile(tmp_path / "absent" / "client.properties").publish(CREDENTIALS)
    assert str(error.value) == f"cannot write {tmp_path / 'absent' / 'client.properties'}: No such file or directory"
