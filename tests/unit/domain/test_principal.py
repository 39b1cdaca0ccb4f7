"""KafkaPrincipal: ``Type:name`` parsing as Kafka's ``SecurityUtils.parseKafkaPrincipal`` reads it."""

from __future__ import annotations

import pytest

from app.domain.errors import InvalidInput, InvalidPrincipal
from app.domain.principal import MAX_PRINCIPAL_LENGTH, USER_TYPE, KafkaPrincipal


@pytest.mark.parametrize(
    ("text", "principal_type", "name"),
    [
        ("User:alice", "User", "alice"),
        ("User:CN=a:b", "User", "CN=a:b"),  # the first colon splits; the name keeps the others
        ("User:CN=alice,OU=eng,O=Acme:Corp", "User", "CN=alice,OU=eng,O=Acme:Corp"),
        ("User:é", "User", "é"),
        ("User:用户", "User", "用户"),
        ("User:a b", "User", "a b"),
        ("Group:readers", "Group", "readers"),
        ("Service_Account-2:x", "Service_Account-2", "x"),
        ("User:*", "User", "*"),
    ],
)
def test_parse_accepts_valid_principals(text: str, principal_type: str, name: str) -> None:
    principal = KafkaPrincipal.parse(text)
    assert principal == KafkaPrincipal(principal_type, name)


@pytest.mark.parametrize(
    "text",
    ["User:alice", "User:CN=a:b", "User:é", "Group:readers", "User:CN=a b,O=x*y~z+w"],
)
def test_str_round_trips_through_parse(text: str) -> None:
    assert str(KafkaPrincipal.parse(text)) == text


def test_str_is_type_colon_name() -> None:
    assert str(KafkaPrincipal("User", "CN=a:b")) == "User:CN=a:b"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("alice", id="no-colon"),
        pytest.param("", id="empty"),
        pytest.param(":alice", id="empty-type"),
        pytest.param("User:", id="empty-name"),
        pytest.param(":", id="only-colon"),
        pytest.param("Us er:alice", id="space-in-type"),
        pytest.param("1User:alice", id="type-starts-with-digit"),
        pytest.param("Us/er:alice", id="slash-in-type"),
        pytest.param("Usér:alice", id="non-ascii-type"),
        pytest.param(" User:alice", id="leading-space-in-type"),
        pytest.param("U" * 65 + ":alice", id="type-too-long"),
        pytest.param("User:a\x00b", id="nul-in-name"),
        pytest.param("User:a\nb", id="newline-in-name"),
        pytest.param("User:a\rb", id="carriage-return-in-name"),
        pytest.param("User:a\tb", id="tab-in-name"),
        pytest.param("User:a\x1fb", id="unit-separator-in-name"),
        pytest.param("User:a\x7fb", id="delete-in-name"),
        pytest.param("User:alice\n", id="trailing-newline"),
    ],
)
def test_parse_refuses_malformed_principals(text: str) -> None:
    with pytest.raises(InvalidPrincipal):
        KafkaPrincipal.parse(text)


def test_invalid_principal_is_an_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        KafkaPrincipal.parse("alice")


@pytest.mark.parametrize("value", [None, 42, b"User:alice", ["User", "alice"]])
def test_parse_refuses_non_strings(value: object) -> None:
    with pytest.raises(InvalidPrincipal):
        KafkaPrincipal.parse(value)  # type: ignore[arg-type]


def test_parse_accepts_exactly_max_length() -> None:
    text = "User:" + "a" * (MAX_PRINCIPAL_LENGTH - len("User:"))
    assert len(text) == MAX_PRINCIPAL_LENGTH
    assert KafkaPrincipal.parse(text).name == "a" * (MAX_PRINCIPAL_LENGTH - len("User:"))


def test_parse_refuses_longer_than_max_length() -> None:
    text = "User:" + "a" * (MAX_PRINCIPAL_LENGTH - len("User:") + 1)
    assert len(text) == MAX_PRINCIPAL_LENGTH + 1
    with pytest.raises(InvalidPrincipal):
        KafkaPrincipal.parse(text)


def test_parse_refuses_very_long_strings() -> None:
    with pytest.raises(InvalidPrincipal):
        KafkaPrincipal.parse("User:" + "x" * 1_000_000)


def test_error_message_does_not_echo_the_input() -> None:
    secretish = "User:pa\x00ssword-like-value"
    with pytest.raises(InvalidPrincipal) as excinfo:
        KafkaPrincipal.parse(secretish)
    assert "password-like-value" not in str(excinfo.value)


def test_is_user_true_only_for_user_type() -> None:
    assert KafkaPrincipal.parse("User:alice").is_user
    assert not KafkaPrincipal.parse("Group:alice").is_user
    assert not KafkaPrincipal.parse("user:alice").is_user  # the type is case-sensitive, as in Kafka


def test_user_factory_makes_a_user_principal() -> None:
    principal = KafkaPrincipal.user("CN=a:b")
    assert principal.principal_type == USER_TYPE
    assert principal.name == "CN=a:b"
    assert principal.is_user
    assert principal == KafkaPrincipal.parse("User:CN=a:b")


def test_principals_are_hashable_and_compare_by_value() -> None:
    assert {KafkaPrincipal.parse("User:a"), KafkaPrincipal.user("a")} == {KafkaPrincipal("User", "a")}
    assert KafkaPrincipal.user("a") != KafkaPrincipal("Group", "a")
