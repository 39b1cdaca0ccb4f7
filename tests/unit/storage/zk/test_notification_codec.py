"""Change notification payloads (docs/kafka-compatibility.md#token-znodes and #scram-user-credentials)."""

from __future__ import annotations

from app.storage.zk.notification_codec import token_change, user_config_change


def test_token_change_is_the_raw_utf8_token_id_not_json() -> None:
    assert token_change("E8gTWaIxRUOaSRH7wY3N1w") == b"E8gTWaIxRUOaSRH7wY3N1w"


def test_user_config_change_is_exact_compact_json() -> None:
    assert user_config_change("alice") == b'{"version":2,"entity_path":"users/alice"}'


def test_user_config_change_sanitizes_the_user_name() -> None:
    assert user_config_change("CN=a b,O=x*y") == b'{"version":2,"entity_path":"users/CN%3Da%20b%2CO%3Dx%2Ay"}'


def test_user_config_change_of_non_ascii_name_is_percent_encoded() -> None:
    assert user_config_change("é") == b'{"version":2,"entity_path":"users/%C3%A9"}'
