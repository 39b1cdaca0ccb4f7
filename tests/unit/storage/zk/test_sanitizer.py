"""Kafka's ``Sanitizer``: Java ``URLEncoder`` with ``*`` as ``%2A`` and space as ``%20``."""

from __future__ import annotations

import pytest

from app.storage.zk.sanitizer import desanitize, sanitize

VECTORS = [
    ("User:alice", "User%3Aalice"),
    ("User:CN=a b,O=x*y~z+w", "User%3ACN%3Da%20b%2CO%3Dx%2Ay%7Ez%2Bw"),
    ("User:é", "User%3A%C3%A9"),
]


@pytest.mark.parametrize(("plain", "sanitized"), VECTORS)
def test_sanitize_matches_kafka_vectors(plain: str, sanitized: str) -> None:
    assert sanitize(plain) == sanitized


@pytest.mark.parametrize(("plain", "sanitized"), VECTORS)
def test_desanitize_reads_kafka_vectors(plain: str, sanitized: str) -> None:
    assert desanitize(sanitized) == plain


@pytest.mark.parametrize(
    "plain",
    [
        "User:alice",
        "User:CN=a b,O=x*y~z+w",
        "User:é",
        "User:用户",
        "User:a/b?c#d&e%f",
        "User:emoji-\U0001f600",
        "",
        "~*+ %",
    ],
)
def test_round_trip(plain: str) -> None:
    assert desanitize(sanitize(plain)) == plain


def test_java_unreserved_characters_are_kept() -> None:
    assert sanitize("azAZ09._-") == "azAZ09._-"


@pytest.mark.parametrize(
    ("char", "encoded"),
    [("*", "%2A"), (" ", "%20"), ("~", "%7E"), ("+", "%2B"), (":", "%3A"), ("/", "%2F"), ("%", "%25")],
)
def test_special_characters_are_percent_encoded_like_kafka(char: str, encoded: str) -> None:
    assert sanitize(char) == encoded


def test_sanitized_text_never_contains_a_slash_so_it_is_one_znode_name() -> None:
    assert "/" not in sanitize("User:a/b/c")


def test_desanitize_reads_plus_as_space_like_java_url_decoder() -> None:
    assert desanitize("User%3Aa+b") == "User:a b"


def test_desanitize_refuses_invalid_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        desanitize("User%3A%FF")
